"""Approval of side effects: what a run asks before it moves money, and the answer it got.

A run that reaches a side effect above its thresholds waits before the call, with the
request in the `progress` query and search attribute `AgentAwaiting = "approval"`. The
Temporal Update `approve` (`ApprovalDecision`) resumes it; past the timeout the side
effect is declined. The record of every decision is in the result and the run record.
"""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field

from agentkeel.schemas.actor import Actor
from agentkeel.schemas.origin import ArgumentOrigin
from agentkeel.schemas.text import FreeText, SafeName


class ApprovalPolicyInput(BaseModel):
    """Input of the `approval_policy` local activity."""

    tenant: str = "default"


class ApprovalPolicy(BaseModel):
    """The thresholds in force for a run (worker settings, recorded in the run's history)."""

    threshold_cents: int = 10_000
    """Above this, a side effect from any actor waits for approval."""
    self_service_cents: int = 2_000
    """Above this, a side effect a scoped actor (a customer) asked for waits for approval."""
    timeout_s: float = 86_400.0
    """How long a run waits for a decision before it declines the side effect."""

    def required_for(
        self, actor: Actor, amount_cents: int, *, already: int = 0, scoped: bool = False
    ) -> str | None:
        """Why `actor` moving `amount_cents` needs approval, or None when it does not.

        `already`: what was moved before (by the run, and by the actor or on the target
        in the ledger's window); thresholds apply to the total, so a refund split into
        small parts, in one run or in many, waits like the whole would. `scoped`: the actor's
        role acts for one subject (the domain's `Role.scoped`): the self-service limit holds.
        """
        total = already + amount_cents
        so_far = f" (with {already} cents moved earlier)" if already else ""
        if total > self.threshold_cents:
            return f"above the approval threshold of {self.threshold_cents} cents{so_far}"
        if scoped and total > self.self_service_cents:
            return f"above the self-service limit of {self.self_service_cents} cents{so_far}"
        return None


class ApprovalRequest(BaseModel):
    """A side effect waiting for a decision."""

    step_id: str
    call_id: str
    tool: str
    args: dict[str, object]
    amount_cents: int
    actor: Actor
    """Who asked for the side effect."""
    approver_role: str = "staff"
    """Who must decide: a role of the domain that may approve (`Role.may_approve`)."""
    why: str
    provenance: dict[str, ArgumentOrigin] = Field(default_factory=dict)
    """Where the arguments naming its target and amount came from."""
    approval_id: int = 0
    """Unique within the run: numbered by the gate in the order requests start waiting."""
    requested_at: datetime | None = None
    deadline: datetime | None = None
    """Set by the gate when the request starts waiting (after any request before it)."""


class ApprovalDecision(BaseModel):
    """Input of the `approve` update."""

    model_config = ConfigDict(extra="forbid")

    approved: bool
    approver: SafeName
    reason: FreeText = Field(default="", max_length=1000)
    by: Actor | None = None
    """Who decides: role and subject; the gateway sets it from the key; a Temporal client
    that leaves it out is a trusted service."""
    approval_id: int | None = None
    """Required: the request the approver saw (`progress.awaiting.approval_id`). The update's
    validator refuses a decision without it (`ApprovalIdRequired`) and one for another, a
    decided or an unknown request, so it never lands on one it was not made for (a later
    request of the same step, in another planning round, say). It defaults to None only so
    that decisions recorded before it was required still decode."""


class ApprovalRecord(BaseModel):
    """One request and how it ended: approved, rejected, or declined at its deadline."""

    request: ApprovalRequest
    approved: bool
    approver: str | None = None
    approved_by: Actor | None = None
    """The deciding actor, where the decision named one (`ApprovalDecision.by`)."""
    reason: str = ""
    timed_out: bool = False
    cancelled: bool = False
    """The wait ended without a decision because its step or run was cancelled: its id is
    never asked again, so no later decision for it lands on another request."""
    decided_at: datetime


class ApprovalAnswer(BaseModel):
    """Result of the `approve` update: the decision as recorded."""

    approval_id: int
    step_id: str
    call_id: str
    tool: str
    approved: bool
    approver: str
