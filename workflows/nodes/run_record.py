"""The `store` node: the run's result, recorded in Postgres and offered to the path cache."""

from __future__ import annotations

from typing import Any

from temporalio import workflow
from temporalio.exceptions import ActivityError, is_cancelled_exception

from schemas import names
from schemas.result import AgentResult, CacheStatus, StepError, Timings
from schemas.run_record import StoreInput, StoreResult
from workflows import timeouts
from workflows.state import AgentState
from workflows.visibility import elapsed_ms, stage


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
        approvals=list(state["context"].gate.records),
        workflow_id=info.workflow_id,
        run_id=info.run_id,
    )
    return await _record(state, result, update_cache=request.options.use_cache)


async def _record(state: AgentState, result: AgentResult, *, update_cache: bool) -> dict[str, Any]:
    request = state["request"]
    stage(state, "recording the run")
    # Local for the same reason as the lookup; it is durable all the same (a marker
    # in history) and idempotent, so a retry after a crash records the run once.
    warnings = list(result.warnings)
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
            ),
            result_type=StoreResult,
            start_to_close_timeout=timeouts.STORE_TIMEOUT,
            retry_policy=timeouts.STORE_RETRY,
            summary="store run",
        )
    except ActivityError as exc:
        if is_cancelled_exception(exc):
            raise
        # The answer exists (and a refund may have been issued): losing the record must
        # not turn a done run into a failed one. Say so in the result and the logs.
        workflow.logger.error("run record not stored: %s", exc.cause)
        warnings.append(f"run record not stored: {exc.cause}")
    total = elapsed_ms(state["started_at"])
    final_timings = result.timings_ms.model_copy(update={"total": total})
    if result.cache in (CacheStatus.EXACT, CacheStatus.SEMANTIC):
        final_timings.ttft = total
    return {"result": result.model_copy(update={"timings_ms": final_timings, "warnings": warnings})}
