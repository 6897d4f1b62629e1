"""The workflow's side of the effects ledger: claim before approval, settle after the call.

Local activities (`activities.effects_ledger`): a marker each in the run's history, so a
replayed run reads its claim's sums as they were; retried on failure like the run record,
because an effect must never start without its claim.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from datetime import timedelta

from temporalio import workflow
from temporalio.exceptions import ActivityError, ApplicationError

from agentkeel.schemas import errors, names
from agentkeel.schemas.approvals import ApprovalRecord
from agentkeel.schemas.effects import (
    EffectClaim,
    EffectClaimed,
    EffectRefusal,
    EffectSettlement,
    EffectStatus,
)
from agentkeel.schemas.origin import ArgumentOrigin
from agentkeel.schemas.result import StepError
from agentkeel.schemas.tools import ToolSpec
from agentkeel.sdk.serving import active_domain
from agentkeel.workflows import timeouts
from agentkeel.workflows.dag.calls import ToolCall
from agentkeel.workflows.dag.run_context import RunContext

LEDGER_TIMEOUT = timedelta(seconds=10)


@dataclass
class ClearedEffect:
    """A side effect cleared to start: its key, and what the ledger and approval said."""

    key: str
    claimed: bool = False
    already_made: bool = False
    approval: ApprovalRecord | None = None


def effect_target(spec: ToolSpec, args: dict[str, object]) -> str:
    """What an effect changes, as limits count it per target: `account_id=7`."""
    return ":".join(f"{name}={args.get(name)}" for name in spec.identity_args)


def claim_of(
    call: ToolCall,
    spec: ToolSpec,
    ctx: RunContext,
    key: str,
    origins: dict[str, ArgumentOrigin],
) -> EffectClaim:
    amount = call.args.get(spec.amount_arg) if spec.amount_arg is not None else 0
    info = workflow.info()
    domain = active_domain()
    return EffectClaim(
        tenant=ctx.request.tenant,
        effect_key=key,
        tool=spec.name,
        target=effect_target(spec, call.args),
        amount_cents=amount if isinstance(amount, int) and amount > 0 else 0,
        actor=ctx.request.actor,
        args=call.args,
        provenance=origins,
        workflow_id=info.workflow_id,
        run_id=info.run_id,
        request_id=ctx.request.request_id,
        step_id=call.step_id,
        call_id=call.call_id,
        window_s=domain.effect_window_s,
        scoped_roles=[role.name for role in domain.roles if domain.is_scoped(role.name)],
    )


async def claim(request: EffectClaim) -> EffectClaimed:
    claimed: EffectClaimed = await workflow.execute_local_activity(
        names.CLAIM_EFFECT,
        request,
        result_type=EffectClaimed,
        start_to_close_timeout=LEDGER_TIMEOUT,
        retry_policy=timeouts.STORE_RETRY,
        summary=f"claim {request.tool} {request.target}".strip(),
    )
    return claimed


async def record_refusal(request: EffectClaim, error: StepError) -> None:
    await workflow.execute_local_activity(
        names.RECORD_REFUSAL,
        EffectRefusal(claim=request, error_type=error.type, reason=error.message),
        start_to_close_timeout=LEDGER_TIMEOUT,
        retry_policy=timeouts.STORE_RETRY,
        summary=f"refused {request.tool}",
    )


async def settle(
    cleared: ClearedEffect,
    status: EffectStatus,
    *,
    approval: ApprovalRecord | None = None,
    error: StepError | None = None,
    only_by: ToolCall | None = None,
) -> None:
    """Record how a claimed effect ended (a no-op for one the ledger did not claim);
    `only_by`: only where that call of this run wrote the claim."""
    if not cleared.claimed:
        return
    approval = approval or cleared.approval
    await workflow.execute_local_activity(
        names.SETTLE_EFFECT,
        EffectSettlement(
            effect_key=cleared.key,
            status=status,
            approved_by=approval.approved_by if approval else None,
            approver=approval.approver if approval else None,
            approval_why=approval.request.why if approval else None,
            error_type=error.type if error else None,
            reason=(error.message if error else (approval.reason if approval else ""))[:2000],
            claimed_by_run=workflow.info().run_id if only_by is not None else None,
            claimed_by_call=only_by.call_id if only_by is not None else None,
        ),
        start_to_close_timeout=LEDGER_TIMEOUT,
        retry_policy=timeouts.STORE_RETRY,
        summary=f"settle {status.value}",
    )


def status_after(failure: BaseException) -> EffectStatus:
    """How a call that raised `failure` ended: FAILED when the tool itself raised (its
    transaction rolled back, nothing moved), UNKNOWN otherwise (a timeout or a cancel may
    come after a commit, so its amount keeps counting)."""
    cause = failure.cause if isinstance(failure, ActivityError) else failure
    return EffectStatus.FAILED if isinstance(cause, ApplicationError) else EffectStatus.UNKNOWN


async def claim_to_its_end(
    request: EffectClaim, claiming: ClearedEffect, call: ToolCall
) -> EffectClaimed:
    """The claim's write, never cut short: a cancel that lands meanwhile (delivered to a
    local activity in flight as its `ActivityError`, or lost where the write had just
    returned) waits for the write to end, then ends the claim this call wrote, then
    cancels the step."""
    writing = asyncio.ensure_future(claim(request))
    try:
        return await asyncio.shield(writing)
    except asyncio.CancelledError:
        await asyncio.gather(writing, return_exceptions=True)  # committed, or not at all
        await end_cancelled(claiming, call, "being claimed", only_ours=True)
        raise


async def end_cancelled(
    cleared: ClearedEffect, call: ToolCall, during: str, *, only_ours: bool = False
) -> None:
    """`only_ours`: the claim may not have been written, or be another run's or step's
    (a live claim under the same key): it is ended only where this call wrote it."""
    ended = StepError(
        type=errors.CANCELLED, message=f"{call.tool} {call.call_id}: cancelled while {during}"
    )
    await settle(cleared, EffectStatus.CANCELLED, error=ended, only_by=call if only_ours else None)
