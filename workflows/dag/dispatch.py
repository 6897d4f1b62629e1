"""The `execute` node's engine: admits a plan, then runs it as tool activities.

Every call carries the run's actor (the tools enforce row-level access with it); a side
effect also carries its idempotency key, waits for approval above the thresholds, and is
cancelled and waited for if the run is cancelled while it is in flight.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import timedelta
from typing import Any

from temporalio import workflow
from temporalio.exceptions import ActivityError
from temporalio.workflow import ActivityCancellationType

from agentkeel.schemas.effects import EffectStatus
from agentkeel.schemas.plan.model import Plan
from agentkeel.schemas.plan.provenance import Provenance
from agentkeel.schemas.plan.validation import PlanValidationError
from agentkeel.schemas.result import StepError, StepOutcome
from agentkeel.schemas.tools import TOOLS, ToolSpec
from agentkeel.workflows.dag import effect_ledger
from agentkeel.workflows.dag.admission import refuse_plan
from agentkeel.workflows.dag.calls import ToolCall
from agentkeel.workflows.dag.effect_gate import await_approval, clear_effect
from agentkeel.workflows.dag.fan_out import PARTITION_AT, may_partition, run_fan_out
from agentkeel.workflows.dag.run_context import RunContext
from agentkeel.workflows.dag.scheduler import DagScheduler
from agentkeel.workflows.dag.step_gates import SchedulerLimits
from agentkeel.workflows.dag.tool_activity import (
    LocalToolFailed,
    StepRefused,
    describe_error,
    execute_tool,
    summary_of,
    with_tenant,
)
from agentkeel.workflows.dag.watch_slot import hold_watch_slot


async def run_plan(
    plan: Plan,
    ctx: RunContext,
    *,
    attempt: int,
    on_start: Callable[[list[StepOutcome]], None] | None = None,
    resume: Sequence[StepOutcome] = (),
) -> tuple[list[StepOutcome], StepError | None]:
    """Outcomes of every step, or no outcomes and the reason the plan was rejected.

    Watches that stopped for a continue-as-new come back still RUNNING (`resume` hands
    them, with the finished steps, to the run that continues this one)."""
    refused = refuse_plan(
        plan,
        ctx.request.options,
        ctx.allowed_effects,
        limits=ctx.authority,
        read_only=ctx.read_only,
    )
    if refused is not None:
        workflow.logger.info("plan refused: %s %s", refused.type, refused.message)
        return [], refused
    effects = EffectRoles.after(resume)
    try:
        scheduler = DagScheduler(
            plan,
            TOOLS,
            dispatch=lambda call: _dispatch(call, ctx, effects),
            now=workflow.now,
            describe_error=describe_error,
            limits=_limits(ctx),
            attempt=attempt,
            step_failures=(ActivityError, LocalToolFailed, StepRefused),
            cancel_in_flight=ctx.authority,
            sleep=_durable_sleep,
            on_wait=ctx.waits.show,
            resume=resume,
            first_wait=lambda: hold_watch_slot(ctx),
        )
    except PlanValidationError as exc:
        workflow.logger.info("plan rejected: %s %s", exc.kind, exc.message)
        return [], StepError(type=exc.kind, message=exc.message, non_retryable=True)
    if ctx.effect_rules:
        ctx.provenance = Provenance({s.id: s for s in plan.steps}, TOOLS, ctx.trusted_facts())
        ctx.effect_origins = {}
    if on_start is not None:
        on_start(list(scheduler.outcomes.values()))
    try:
        outcomes = await scheduler.run()
    finally:
        ctx.calls_used += scheduler.calls_started
    for outcome in outcomes:  # where each side effect's target and amount came from
        if outcome.id in ctx.effect_origins:
            outcome.provenance = ctx.effect_origins[outcome.id]
    return outcomes, None


def _limits(ctx: RunContext) -> SchedulerLimits:
    if not ctx.authority:  # a run recorded before the limits existed replays without them
        return SchedulerLimits(max_concurrency=ctx.request.options.max_concurrency)
    options = ctx.request.options
    return SchedulerLimits(
        max_concurrency=ctx.concurrency or options.max_concurrency,
        max_fan_out=options.max_fan_out,
        max_calls=max(options.max_tool_calls - ctx.calls_used, 0),
        watch_every_s=options.watch_every_s,
        runs_before_continue=options.continue_after_runs,
        partition_at=PARTITION_AT,
        may_partition=may_partition,
        history_full=lambda: workflow.info().is_continue_as_new_suggested(),
    )


async def _durable_sleep(duration: timedelta, summary: str) -> None:
    """A timer in the run's history: it outlives workers, restarts and deployments."""
    await workflow.sleep(duration, summary=summary)


class EffectRoles:
    """What each side-effecting call of one plan does, as its idempotency key names it.

    `close_ticket:ticket_id=7#0` is the first close of ticket 7 in the plan, whatever
    the step is called or where it sits: the same request planned again gets the same keys.
    """

    def __init__(self) -> None:
        self._seen: dict[str, int] = {}

    @classmethod
    def after(cls, earlier: Sequence[StepOutcome]) -> EffectRoles:
        """Roles that go on counting from the side effects a continued run already made."""
        roles = cls()
        for outcome in earlier:
            spec = TOOLS.get(outcome.tool)
            if spec is None or spec.idempotent or outcome.started_at is None:
                continue
            for args in outcome.args if isinstance(outcome.args, list) else [outcome.args]:
                roles.role(spec, args)
        return roles

    def role(self, spec: ToolSpec, args: dict[str, Any]) -> str:
        identity = ",".join(f"{name}={args.get(name)}" for name in spec.identity_args)
        what = f"{spec.name}:{identity}" if identity else spec.name
        count = self._seen.get(what, 0)
        self._seen[what] = count + 1
        return f"{what}#{count}"


async def _dispatch(call: ToolCall, ctx: RunContext, effects: EffectRoles) -> Any:
    spec = TOOLS[call.tool]
    if call.batch is not None:
        return await run_fan_out(call, ctx)
    if ctx.speculation is not None and spec.idempotent:
        twin = ctx.speculation.claim(call)
        if twin is not None:  # started while the plan was written: its result is this call's
            served, result = await ctx.speculation.serve(twin, call)
            if served:
                return result
    actor = ctx.request.actor.model_dump(mode="json")
    payload = with_tenant({**call.args, "actor": actor}, ctx.request.tenant)
    if ctx.stale_ok and spec.idempotent and spec.cache_ttl is not None:
        payload["stale_ok"] = True  # a deadline's trade (`workflows.deadline`)
    if spec.downstream is not None and ctx.authority:
        payload["call_id"] = call.call_id  # a wait for a downstream slot is shown against it
    if call.watch:
        payload["fresh"] = True  # a watch reads the source each time, never a cached result
    options: dict[str, Any] = {}
    cleared = None
    if not spec.idempotent and ctx.effect_rules:
        cleared = await clear_effect(call, spec, ctx, payload)
        payload["idempotency_key"] = cleared.key
    elif not spec.idempotent:
        role = effects.role(spec, call.args)
        payload["idempotency_key"] = ctx.idempotency_key(role, call.call_id)
        if ctx.authority:
            await await_approval(call, spec, ctx, {})
    if not spec.idempotent:
        # Cancelled with the run, and waited for: an effect not yet committed never commits
        # after the cancel (the activity heartbeats, sees it, and rolls back).
        options = {"cancellation_type": ActivityCancellationType.WAIT_CANCELLATION_COMPLETED}
    try:
        local = ctx.local_tools and spec.local_read and not call.watch
        result = await execute_tool(
            spec, payload, ctx.tool_queue, summary_of(call), local=local, **options
        )
    except BaseException as failure:
        if cleared is not None:
            error = describe_error(failure)
            await effect_ledger.settle(cleared, effect_ledger.status_after(failure), error=error)
        raise
    finally:
        if "call_id" in payload:
            ctx.waits.end_slot_wait(call.call_id)
    if cleared is not None:
        await effect_ledger.settle(cleared, EffectStatus.MADE)
    return result
