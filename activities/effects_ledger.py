"""The effects ledger (`agent_effects`): claims, settlements, refusals, and the audit list.

A claim and the window sums it returns are one transaction under advisory locks on the
actor and the target, so two runs claiming at once are counted one after the other: the
second sees the first's amount. Local activities of the workflow worker (a marker in the
run's history each, no task-queue hop), idempotent by effect key: a retried claim finds
its own row, a retried settlement changes nothing twice.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import asyncpg
from temporalio import activity

from agentkeel.schemas import errors, names
from agentkeel.schemas.actor import Actor, role_refusal_reason
from agentkeel.schemas.effects import (
    COUNTED,
    AuditEntry,
    AuditQuery,
    EffectClaim,
    EffectClaimed,
    EffectRefusal,
    EffectSettlement,
    EffectStatus,
    actor_identity,
)

_COUNTED = [s.value for s in COUNTED]

_LIVE_CLAIM = """
SELECT status FROM agent_effects WHERE effect_key = $1 AND status = ANY($2::text[])
"""

_MOVED_BY_ACTOR = """
SELECT coalesce(sum(amount_cents), 0) FROM agent_effects
WHERE tenant = $1 AND actor_identity = $2 AND status = ANY($3::text[])
  AND created_at > now() - make_interval(secs => $4) AND effect_key IS DISTINCT FROM $5
"""

_MOVED_ON_TARGET = """
SELECT coalesce(sum(amount_cents), 0) FROM agent_effects
WHERE tenant = $1 AND target = $2 AND status = ANY($3::text[])
  AND created_at > now() - make_interval(secs => $4) AND effect_key IS DISTINCT FROM $5
  AND NOT (status = 'claimed' AND actor_role = ANY($6::text[]) AND actor_identity <> $7)
"""

_INSERT = """
INSERT INTO agent_effects (tenant, effect_key, tool, target, amount_cents, status,
                           actor_role, actor_subject, actor_name, actor_identity, provenance,
                           args, workflow_id, run_id, request_id, step_id, call_id,
                           error_type, reason, settled_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11::jsonb, $12::jsonb, $13, $14, $15, $16,
        $17, $18, $19, CASE WHEN $6 = 'claimed' THEN NULL ELSE now() END)
"""

_SETTLE = """
UPDATE agent_effects
SET status = $2, approver = $3, approved_by = $4::jsonb, approval_why = $5, error_type = $6,
    reason = $7, settled_at = now()
WHERE effect_key = $1 AND status = 'claimed'
  AND ($8::text IS NULL OR (run_id = $8 AND call_id = $9))
"""

_LIST = """
SELECT * FROM agent_effects
WHERE tenant = $1
  AND ($2::text IS NULL OR actor_identity = $2 OR actor_role = $2)
  AND ($3::text IS NULL OR target = $3)
  AND ($4::timestamptz IS NULL OR created_at >= $4)
  AND ($5::timestamptz IS NULL OR created_at < $5)
ORDER BY created_at DESC, effect_id DESC
LIMIT $6
"""


_OPEN_CLAIMS = """
SELECT effect_id, effect_key, tool, workflow_id, run_id FROM agent_effects
WHERE status = 'claimed' AND created_at < now() - make_interval(secs => $1)
  AND effect_id > $3
ORDER BY effect_id LIMIT $2
"""

_END_CLAIM = """
UPDATE agent_effects SET status = $2, error_type = $3, reason = $4, settled_at = now()
WHERE effect_id = $1 AND status = 'claimed'
"""


class EffectLedger:
    """The ledger's queries on one pool (workers' activities, the CLI, the gateway)."""

    def __init__(self, pool: asyncpg.Pool) -> None:
        self._pool = pool

    async def claim(self, claim: EffectClaim) -> EffectClaimed:
        identity = actor_identity(claim.actor)
        async with self._pool.acquire() as conn, conn.transaction():
            # One order for every claimer (sorted), so two claims never wait on each other.
            for lock in sorted({f"{claim.tenant}/actor/{identity}", _target_lock(claim)}):
                await conn.execute("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))", lock)
            live = await conn.fetchval(_LIVE_CLAIM, claim.effect_key, _COUNTED)
            window = (claim.window_s, claim.effect_key)
            by_actor = await conn.fetchval(
                _MOVED_BY_ACTOR, claim.tenant, identity, _COUNTED, *window
            )
            on_target = 0
            if claim.target:
                on_target = await conn.fetchval(
                    _MOVED_ON_TARGET,
                    claim.tenant,
                    claim.target,
                    _COUNTED,
                    *window,
                    claim.scoped_roles,
                    identity,
                )
            if live is None:
                await conn.execute(*_insert(claim, EffectStatus.CLAIMED))
        return EffectClaimed(
            actor_moved_cents=int(by_actor),
            target_moved_cents=int(on_target),
            already_made=live in (EffectStatus.MADE, EffectStatus.UNKNOWN),
        )

    async def settle(self, settlement: EffectSettlement) -> None:
        by = settlement.approved_by
        await self._pool.execute(
            _SETTLE,
            settlement.effect_key,
            settlement.status.value,
            settlement.approver,
            json.dumps(by.model_dump(mode="json")) if by is not None else None,
            settlement.approval_why,
            settlement.error_type,
            settlement.reason,
            settlement.claimed_by_run,
            settlement.claimed_by_call,
        )

    async def refuse(self, refusal: EffectRefusal) -> None:
        """A refused effect: an audit row that counts toward nothing and holds no key."""
        await self._pool.execute(
            *_insert(
                refusal.claim,
                EffectStatus.REFUSED,
                error_type=refusal.error_type,
                reason=refusal.reason,
            )
        )

    async def open_claims(
        self, older_than_s: float, limit: int = 100, after_id: int = 0
    ) -> list[asyncpg.Record]:
        """Claims still open after `older_than_s`, oldest first from past `after_id` (a
        page): those of a run that ended without settling them are the claim sweep's
        (`workers.claim_sweep`)."""
        return list(await self._pool.fetch(_OPEN_CLAIMS, older_than_s, limit, after_id))

    async def end_claim(
        self, effect_id: int, status: EffectStatus, error_type: str, reason: str
    ) -> bool:
        """End one open claim; False when it had ended meanwhile (its run settled it)."""
        done = await self._pool.execute(_END_CLAIM, effect_id, status.value, error_type, reason)
        return bool(done.endswith(" 1"))

    async def entries(self, query: AuditQuery) -> list[AuditEntry]:
        rows = await self._pool.fetch(
            _LIST, query.tenant, query.actor, query.target, query.since, query.until, query.limit
        )
        return [_entry(row) for row in rows]


class EffectLedgerActivities:
    def __init__(self, ledger: EffectLedger) -> None:
        self._ledger = ledger

    def all(self) -> list[Callable[..., Any]]:
        return [self.claim_effect, self.settle_effect, self.record_refusal]

    @activity.defn(name=names.CLAIM_EFFECT)
    async def claim_effect(self, claim: EffectClaim) -> EffectClaimed:
        refused = role_refusal_reason(claim.tool, claim.allowed_roles, claim.actor)
        if refused is not None:  # an audit row only: nothing claimed, nothing counted
            await self._ledger.refuse(
                EffectRefusal(claim=claim, error_type=errors.NOT_AUTHORIZED, reason=refused)
            )
            return EffectClaimed(refused_role=refused)
        return await self._ledger.claim(claim)

    @activity.defn(name=names.SETTLE_EFFECT)
    async def settle_effect(self, settlement: EffectSettlement) -> None:
        await self._ledger.settle(settlement)

    @activity.defn(name=names.RECORD_REFUSAL)
    async def record_refusal(self, refusal: EffectRefusal) -> None:
        await self._ledger.refuse(refusal)


def _target_lock(claim: EffectClaim) -> str:
    return f"{claim.tenant}/target/{claim.target or claim.effect_key}"


def _insert(
    claim: EffectClaim, status: EffectStatus, *, error_type: str | None = None, reason: str = ""
) -> tuple[Any, ...]:
    actor = claim.actor
    return (
        _INSERT,
        claim.tenant,
        claim.effect_key if status is not EffectStatus.REFUSED else None,
        claim.tool,
        claim.target,
        claim.amount_cents,
        status.value,
        actor.role,
        actor.subject,
        actor.name,
        actor_identity(actor),
        json.dumps({k: v.model_dump(mode="json") for k, v in claim.provenance.items()}),
        json.dumps(claim.args, default=str),
        claim.workflow_id,
        claim.run_id,
        claim.request_id,
        claim.step_id,
        claim.call_id,
        error_type,
        reason,
    )


def _entry(row: asyncpg.Record) -> AuditEntry:
    # Rows are read as recorded: an actor of a role the domain no longer has still lists.
    approved_by = row["approved_by"]
    return AuditEntry(
        effect_id=row["effect_id"],
        tenant=row["tenant"],
        status=EffectStatus(row["status"]),
        tool=row["tool"],
        target=row["target"],
        amount_cents=row["amount_cents"],
        actor=Actor.model_construct(
            role=row["actor_role"], subject=row["actor_subject"], name=row["actor_name"]
        ),
        approved_by=Actor.model_construct(**json.loads(approved_by)) if approved_by else None,
        approver=row["approver"],
        approval_why=row["approval_why"],
        error_type=row["error_type"],
        reason=row["reason"],
        provenance=json.loads(row["provenance"]),
        args=json.loads(row["args"]),
        effect_key=row["effect_key"],
        workflow_id=row["workflow_id"],
        run_id=row["run_id"],
        request_id=row["request_id"],
        step_id=row["step_id"],
        call_id=row["call_id"],
        created_at=row["created_at"],
        settled_at=row["settled_at"],
    )
