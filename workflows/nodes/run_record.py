"""The `store` node: the run's result, recorded in Postgres and offered to the path cache."""

from __future__ import annotations

from typing import Any, NoReturn

from temporalio import workflow
from temporalio.exceptions import ActivityError, ApplicationError

from agentkeel.schemas import names
from agentkeel.schemas.errors import BUDGET_EXHAUSTED
from agentkeel.schemas.plan.model import Plan
from agentkeel.schemas.progress import RunProgress
from agentkeel.schemas.result import ANSWER_HITS, AgentResult, CacheStatus, StepError, Timings
from agentkeel.schemas.route import ConfidenceBasis, Route
from agentkeel.schemas.run_record import StoreInput, StoreResult
from agentkeel.schemas.tokens import CANCELLED_TEXT
from agentkeel.workflows import timeouts
from agentkeel.workflows.budget import DEGRADED_WARNING, exhausted_message
from agentkeel.workflows.cancellation import ends_the_run
from agentkeel.workflows.metrics import observe_run
from agentkeel.workflows.state import AgentState
from agentkeel.workflows.visibility import elapsed_ms, stage


async def store(state: AgentState) -> dict[str, Any]:
    request = state["request"]
    cached: AgentResult | None = state.get("result")
    if cached is not None:
        # A cache hit is recorded too (ops see every run; the warmer counts it), but the
        # cache entry it came from is left as it is.
        return await _record(state, cached, update_cache=False)
    info = workflow.info()
    timings = state.get("timings", Timings()).model_copy()
    timings.total = elapsed_ms(state["started_at"])
    plan_error: StepError | None = state.get("plan_error")
    result = AgentResult(
        answer=state["answer"],
        route=state["route"],
        cache=state.get("cache", CacheStatus.MISS),
        plan=state["plan"],
        steps=state.get("steps", []),
        timings_ms=timings,
        replans=state.get("replans", 0),
        plan_error=plan_error,
        warnings=state.get("warnings", []),
        cache_match=state.get("cache_match"),
        approvals=list(state["progress"].approvals),
        workflow_id=info.workflow_id,
        run_id=info.run_id,
        speculation=state.get("speculation"),
        usage=state["context"].usage,
    )
    if state["context"].budget_degraded:
        result.warnings = [*result.warnings, DEGRADED_WARNING]
    deadline = state["context"].deadline
    if deadline is not None:
        result.deadline = deadline.report()
    update_cache = (
        request.options.use_cache
        and not state.get("degraded", False)
        and not state.get("given", False)
        # A run a schedule made read-only says what it could not do: the same words asked
        # by a run allowed to act must not be answered with it. (A read-only request, the
        # cache warmer's, is cached as before: its caller chose to make no side effect.)
        and not state["context"].read_only
    )
    return await _record(state, result, update_cache=update_cache)


async def record_cancelled_run(state: AgentState, progress: RunProgress) -> None:
    """Record what a cancelled run did before the cancel: its steps so far (a side effect
    that committed included) and its approvals. Nothing of it is cached."""
    info = workflow.info()
    result = AgentResult(
        answer=CANCELLED_TEXT,
        route=progress.route
        or Route(intent="unknown", confidence=0.0, basis=ConfidenceBasis.UNMEASURED),
        cache=CacheStatus.BYPASS,
        plan=Plan(),
        steps=progress.steps,
        timings_ms=Timings(total=elapsed_ms(state["started_at"])),
        replans=progress.replans,
        warnings=["the run was cancelled"],
        approvals=list(progress.approvals),
        workflow_id=info.workflow_id,
        run_id=info.run_id,
        usage=state["context"].usage,
    )
    await _write_record(state, result, update_cache=False)


async def stop_for_budget(state: AgentState) -> NoReturn:
    """End the run whose model budget is spent: its record says what it did so far, and
    so does the error it fails with (`BudgetExhausted`, non-retryable; its details are
    that partial `AgentResult`)."""
    context, progress = state["context"], state["progress"]
    budget = context.request.options.budget
    assert budget is not None  # (asked only of a run with a budget)
    message = exhausted_message(budget, context.usage)
    info = workflow.info()
    partial = AgentResult(
        answer="",
        route=state.get("route")
        or Route(intent="unknown", confidence=0.0, basis=ConfidenceBasis.UNMEASURED),
        cache=state.get("cache", CacheStatus.MISS),
        plan=state.get("plan") or Plan(),
        steps=state.get("steps", []),
        timings_ms=Timings(total=elapsed_ms(state["started_at"])),
        replans=state.get("replans", 0),
        warnings=[*state.get("warnings", []), message],
        approvals=list(progress.approvals),
        workflow_id=info.workflow_id,
        run_id=info.run_id,
        usage=context.usage,
    )
    progress.stage = "stopped: model budget spent"
    await _write_record(state, partial, update_cache=False)
    raise ApplicationError(
        message, partial.model_dump(mode="json"), type=BUDGET_EXHAUSTED, non_retryable=True
    )


async def _record(state: AgentState, result: AgentResult, *, update_cache: bool) -> dict[str, Any]:
    """Record the run's result and return it. The store announces it once recorded
    (`schemas.answers`), so the copy a caller may take before the run closes is this one."""
    stage(state, "recording the run")
    total = elapsed_ms(state["started_at"])
    final_timings = result.timings_ms.model_copy(update={"total": total})
    if result.cache in ANSWER_HITS or state.get("answer_templated"):
        final_timings.ttft = total  # no stream: the answer arrives whole, with the result
    final = result.model_copy(update={"timings_ms": final_timings})
    deadline = state["context"].deadline
    if deadline is not None and final.deadline is not None:
        final.deadline = deadline.report()
    not_stored = await _write_record(state, final, update_cache=update_cache, announce=True)
    if not_stored:
        final = final.model_copy(update={"warnings": [*final.warnings, *not_stored]})
    observe_run(final)
    return {"result": final}


async def _write_record(
    state: AgentState, result: AgentResult, *, update_cache: bool, announce: bool = False
) -> list[str]:
    """The run record (and, if asked, the path cache); the warnings to add if it failed.

    Local for the same reason as the lookup; it is durable all the same (a marker in
    history) and idempotent, so a retry after a crash records the run once.
    """
    request = state["request"]
    try:
        await workflow.execute_local_activity(
            names.STORE,
            StoreInput(
                tenant=request.tenant,
                question=request.question,
                conversation_id=request.conversation_id,
                result=result,
                use_cache=update_cache,
                actor=request.actor,
                request_id=request.request_id,
                announce=announce,
                first_run_id=_first_run_if_continued(state),
            ),
            result_type=StoreResult,
            start_to_close_timeout=timeouts.STORE_TIMEOUT,
            retry_policy=timeouts.STORE_RETRY,
            summary="store run",
        )
    except ActivityError as exc:
        if ends_the_run(exc, state["context"].authority):
            raise
        # The answer exists (and a refund may have been issued): losing the record must
        # not turn a done run into a failed one. Say so in the result and the logs.
        workflow.logger.error("run record not stored: %s", exc.cause)
        return [f"run record not stored: {exc.cause}"]
    return []


def _first_run_if_continued(state: AgentState) -> str | None:
    """The chain's first run id where this run continued it as new (None otherwise: a
    retried, cron or reset run has its own first run id, but no caller watching it)."""
    return workflow.info().first_execution_run_id if state["progress"].continued else None
