"""The effects ledger's contract: a side effect claimed before its call, settled after it.

Limits hold across runs because every side effect is claimed in one ledger
(`agent_effects`) before it starts: the claim records it and returns what its actor and
its target moved in the domain's window, in one transaction under locks on both, so two
runs of one actor, a schedule firing every second or five requests of $19 count together.
The claim is settled once the call ends (made, failed, declined); refusals are recorded
too. The same rows are the audit trail (`agentkeel audit`, `GET /v1/audit`).
"""

from __future__ import annotations

from datetime import UTC, datetime
from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field, field_validator

from agentkeel.schemas.actor import Actor, name_skeleton
from agentkeel.schemas.origin import ArgumentOrigin
from agentkeel.schemas.text import FreeText


class EffectStatus(StrEnum):
    CLAIMED = "claimed"
    """Cleared to start (or waiting for approval): its amount counts toward the limits."""
    MADE = "made"
    FAILED = "failed"
    """The tool refused or rolled back: nothing moved, the amount no longer counts."""
    UNKNOWN = "unknown"
    """The call ended without an answer (a timeout, a cancel): it may have moved, so it
    keeps counting."""
    DECLINED = "declined"
    """An approver rejected it, or no decision came in time."""
    REFUSED = "refused"
    """The workflow refused it before any approval (an untrusted target or amount)."""
    CANCELLED = "cancelled"
    """Its run (or step) was cancelled while it waited for approval: nothing moved, and
    its claim no longer counts."""


COUNTED = (EffectStatus.CLAIMED, EffectStatus.MADE, EffectStatus.UNKNOWN)
"""The statuses whose amounts count toward an actor's and a target's window."""


def actor_identity(actor: Actor) -> str:
    """Whose limits an effect counts toward: role and subject, or the look of the name;
    actors of a role with neither share one count (they cannot be told apart)."""
    if actor.subject is not None:
        return f"{actor.role}:{actor.subject}"
    if actor.name:
        return f"{actor.role}~{name_skeleton(actor.name)}"
    return actor.role


class EffectClaim(BaseModel):
    """Input of the `claim_effect` local activity: a side effect about to wait or start."""

    model_config = ConfigDict(extra="forbid")

    tenant: str
    effect_key: str
    """Its idempotency key: the request (or run chain) and what it changes."""
    tool: str
    target: str = ""
    """What it changes, as `account_id=7` (its identity arguments); '' for none."""
    amount_cents: int = Field(default=0, ge=0)
    actor: Actor
    args: dict[str, object] = Field(default_factory=dict)
    provenance: dict[str, ArgumentOrigin] = Field(default_factory=dict)
    workflow_id: str
    run_id: str
    request_id: str | None = None
    step_id: str
    call_id: str
    window_s: int = Field(gt=0)
    scoped_roles: list[str] = Field(default_factory=list)
    """The domain's roles that act for one subject (a customer). Their claims still waiting
    (not yet made) count toward their own actor, never toward a target for anyone else:
    the tool checks that the row is theirs only when it runs, so a customer's claim on
    another's order must not hold back the effects others make there."""
    allowed_roles: list[str] | None = None
    """The roles the tool allows (the catalog's as the run claimed); an actor of another
    role is refused by the claim itself, before anything is claimed, so the decision is in
    the run's history whatever the catalog says when it is replayed. None: every role."""


class EffectClaimed(BaseModel):
    """What the ledger holds beside the claim, within the window."""

    actor_moved_cents: int = 0
    """What the same actor's other effects moved (or may have moved)."""
    target_moved_cents: int = 0
    """What other effects on the same target moved."""
    already_made: bool = False
    """The same effect (same key) was made before: the tool answers with it, nothing moves
    again and no approval is asked."""
    refused_role: str | None = None
    """Why the actor's role may not make it (`EffectClaim.allowed_roles`): nothing was
    claimed, the refusal is recorded, and the step fails `NotAuthorized`."""

    @property
    def moved_cents(self) -> int:
        """The larger count: limits hold for the actor and for the target."""
        return max(self.actor_moved_cents, self.target_moved_cents)


class EffectSettlement(BaseModel):
    """Input of the `settle_effect` local activity: how a claimed effect ended."""

    model_config = ConfigDict(extra="forbid")

    effect_key: str
    status: EffectStatus
    approved_by: Actor | None = None
    approver: str | None = None
    approval_why: str | None = None
    error_type: str | None = None
    reason: str = ""
    claimed_by_call: str | None = None
    """Settle the claim only if this call (`EffectClaim.call_id`) of this run
    (`claimed_by_run`) wrote it: a run cancelled while its claim was being written may have
    written none, and must never end another run's or another step's claim."""
    claimed_by_run: str | None = None


class EffectRefusal(BaseModel):
    """Input of the `record_refusal` local activity: a side effect refused outright."""

    model_config = ConfigDict(extra="forbid")

    claim: EffectClaim
    error_type: str
    reason: str


class AuditQuery(BaseModel):
    """Which ledger rows to list, newest first."""

    tenant: FreeText = Field(default="default", max_length=200)
    actor: FreeText | None = Field(default=None, max_length=500)
    """An actor's identity (`customer:5`, `staff~ann`) or a role."""
    target: FreeText | None = Field(default=None, max_length=2000)
    """A target as recorded (`account_id=7`)."""
    since: datetime | None = None
    until: datetime | None = None
    limit: int = Field(default=100, ge=1, le=1000)

    @field_validator("since", "until")
    @classmethod
    def _a_time_the_database_holds(cls, value: datetime | None) -> datetime | None:
        # A NUL or a date past the ends of the calendar is the caller's mistake (a 422),
        # not the database's error (a 500): the time must read in UTC.
        if value is None:
            return None
        try:
            value.astimezone(UTC) if value.tzinfo is not None else value.replace(tzinfo=UTC)
        except (OverflowError, ValueError):
            raise ValueError(f"{value.isoformat()} is out of range in UTC") from None
        return value


class AuditEntry(BaseModel):
    """One side effect, refusal or decision, as the ledger holds it."""

    effect_id: int
    tenant: str
    status: EffectStatus
    tool: str
    target: str
    amount_cents: int
    actor: Actor
    approved_by: Actor | None = None
    approver: str | None = None
    approval_why: str | None = None
    error_type: str | None = None
    reason: str = ""
    provenance: dict[str, ArgumentOrigin] = Field(default_factory=dict)
    args: dict[str, object] = Field(default_factory=dict)
    effect_key: str | None = None
    workflow_id: str
    run_id: str
    request_id: str | None = None
    step_id: str | None = None
    call_id: str | None = None
    created_at: datetime
    settled_at: datetime | None = None
