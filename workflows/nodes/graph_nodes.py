"""The graph's own nodes: cache lookup, plan execution, the run record, and the edges.

`lookup_cache` and `store` call local activities on the CPU worker; `execute`
runs the DAG scheduler inline in the workflow. Model-facing nodes live in
`workflows.nodes.model_calls`.
"""

from __future__ import annotations

from typing import Any

from temporalio import workflow
from temporalio.exceptions import ActivityError

from schemas import names
from schemas.agent import (
    JoinDecision,
    LookupCacheInput,
    LookupCacheResult,
    StoreInput,
    StoreResult,
)
from schemas.result import AgentResult, CacheMatch, CacheStatus, StepError, Timings
from schemas.route import Tier
from workflows import timeouts
from workflows.dag.dispatch import run_plan
from workflows.nodes.model_calls import join, plan, respond, route
from workflows.state import AgentState
from workflows.visibility import add_timing, elapsed_ms, publish_cache, publish_route, stage

__all__ = ["execute", "join", "lookup_cache", "plan", "respond", "route", "store"]


async def lookup_cache(state: AgentState) -> dict[str, Any]:
    request = state["request"]
    if not request.options.use_cache or request.options.refresh_cache:
        return {"cache": CacheStatus.BYPASS}
    stage(state, "looking up the path cache")
    started = workflow.now()
    try:
        # A local activity: the CPU worker that runs this workflow also owns the Redis
        # client, so the lookup skips a task-queue round trip (the hit path is ~ms).
        found: LookupCacheResult = await workflow.execute_local_activity(
            names.LOOKUP_CACHE,
            LookupCacheInput(
                question=request.question,
                tenant=request.tenant,
                conversation_id=request.conversation_id,
            ),
            result_type=LookupCacheResult,
            start_to_close_timeout=timeouts.CACHE_TIMEOUT,
            retry_policy=timeouts.CACHE_RETRY,
        )
    except ActivityError as exc:
        # The cache only accelerates: whatever went wrong, this run is a miss.
        workflow.logger.warning("cache lookup failed, continuing as a miss: %s", exc.cause)
        found = LookupCacheResult(available=False)
    update: dict[str, Any] = {"timings": add_timing(state, "cache", started), "cache": found.status}
    publish_cache(found.status)
    if not found.available:
        update["warnings"] = [*state.get("warnings", []), "cache unavailable: treated as a miss"]
    if found.matched_question is not None:
        update["cache_match"] = CacheMatch(
            question=found.matched_question, similarity=found.similarity
        )
    if found.status == CacheStatus.PLAN and found.plan is not None and found.route is not None:
        # Reuse the plan, run the tools fresh: route and planning are skipped.
        route = found.route.model_copy(update={"tier": Tier.CACHE})
        publish_route(state, route)
        return {**update, "route": route, "plan": found.plan, "confident": True}
    if found.hit is None:
        return {**update, "cache": CacheStatus.MISS}
    timings = update["timings"]
    timings.total = elapsed_ms(state["started_at"])
    timings.ttft = timings.total  # a cached answer arrives whole
    info = workflow.info()
    cached_route = found.hit.route.model_copy(update={"tier": Tier.CACHE})
    publish_route(state, cached_route)
    hit = found.hit.model_copy(
        update={
            "cache": found.status,
            "cache_match": update.get("cache_match"),
            "timings_ms": timings,
            "route": cached_route,
            "workflow_id": info.workflow_id,
            "run_id": info.run_id,
            "warnings": [],
        }
    )
    return {**update, "result": hit}


async def execute(state: AgentState) -> dict[str, Any]:
    started = workflow.now()
    attempt = state.get("replans", 0)
    stage(state, f"running {len(state['plan'].steps)} steps (round {attempt})")
    progress = state["progress"]
    progress.replans = attempt
    planner_error = state.get("planner_error")
    if planner_error is not None:
        # The planner had no usable plan this round: nothing runs, join sees why.
        return {"steps": state.get("steps", []), "plan_error": planner_error}
    outcomes, plan_error = await run_plan(
        state["plan"],
        tool_queue=state["tool_queue"],
        max_concurrency=state["request"].options.max_concurrency,
        attempt=attempt,
        read_only=state["request"].options.read_only,
        # The scheduler updates these outcome objects in place: the query sees them live.
        on_start=lambda live: setattr(progress, "steps", [*state.get("steps", []), *live]),
    )
    return {
        "steps": [*state.get("steps", []), *outcomes],
        "plan_error": plan_error,
        "timings": add_timing(state, "tools", started),
    }


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
            ),
            result_type=StoreResult,
            start_to_close_timeout=timeouts.STORE_TIMEOUT,
            retry_policy=timeouts.STORE_RETRY,
            summary="store run",
        )
    except ActivityError as exc:
        # The answer exists (and a refund may have been issued): losing the record must
        # not turn a done run into a failed one. Say so in the result and the logs.
        workflow.logger.error("run record not stored: %s", exc.cause)
        warnings.append(f"run record not stored: {exc.cause}")
    total = elapsed_ms(state["started_at"])
    final_timings = result.timings_ms.model_copy(update={"total": total})
    if result.cache in (CacheStatus.EXACT, CacheStatus.SEMANTIC):
        final_timings.ttft = total
    return {"result": result.model_copy(update={"timings_ms": final_timings, "warnings": warnings})}


# Conditional edges. LangGraph runs sync callables in an executor, which the
# workflow event loop refuses, so every edge function is `async def`.
async def after_cache(state: AgentState) -> str:
    if state.get("result") is not None:
        return "hit"
    return "plan" if state.get("cache") == CacheStatus.PLAN else "miss"


async def after_route(state: AgentState) -> str:
    return "confident" if state.get("confident") else "unsure"


async def after_join(state: AgentState) -> str:
    return "replan" if state.get("decision") == JoinDecision.REPLAN else "finish"
