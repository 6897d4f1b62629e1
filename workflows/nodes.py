"""Nodes of the agent graph. Each runs inline in the workflow and calls one activity.

Calling typed activities from workflow-side nodes (rather than letting the
plugin turn each node into an activity over the whole state) keeps one input
and one result model per activity in history, sends each activity only what it
needs, and lets every node measure its layer's latency in workflow time.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from temporalio import workflow
from temporalio.exceptions import ActivityError

from schemas.agent import (
    JoinDecision,
    JoinInput,
    JoinResult,
    LookupCacheInput,
    LookupCacheResult,
    PlanInput,
    PlanResult,
    RespondInput,
    RespondResult,
    RouteInput,
    RouteResult,
    StoreInput,
    StoreResult,
)
from schemas.result import AgentResult, CacheStatus, StepError, StepStatus, Timings
from schemas.route import Tier
from workflows import timeouts
from workflows.execute import run_plan
from workflows.state import AgentState


def _stage(state: AgentState, text: str) -> None:
    """Tell ops what the run is doing: the UI's current details and the `progress` query."""
    workflow.set_current_details(text)
    state["progress"].stage = text


def _elapsed_ms(since: datetime) -> float:
    return (workflow.now() - since).total_seconds() * 1000


def _add_timing(state: AgentState, layer: str, since: datetime) -> Timings:
    timings = state.get("timings", Timings()).model_copy()
    setattr(timings, layer, getattr(timings, layer) + _elapsed_ms(since))
    return timings


async def lookup_cache(state: AgentState) -> dict[str, Any]:
    request = state["request"]
    if not request.options.use_cache:
        return {"cache": CacheStatus.BYPASS}
    _stage(state, "looking up the path cache")
    started = workflow.now()
    try:
        # A local activity: the CPU worker that runs this workflow also owns the Redis
        # client, so the lookup skips a task-queue round trip (the hit path is ~ms).
        found: LookupCacheResult = await workflow.execute_local_activity(
            "lookup_cache",
            LookupCacheInput(question=request.question, tenant=request.tenant),
            result_type=LookupCacheResult,
            start_to_close_timeout=timeouts.CACHE_TIMEOUT,
            retry_policy=timeouts.CACHE_RETRY,
        )
    except ActivityError as exc:
        # The cache only accelerates: whatever went wrong, this run is a miss.
        workflow.logger.warning("cache lookup failed, continuing as a miss: %s", exc.cause)
        found = LookupCacheResult(available=False)
    update: dict[str, Any] = {"timings": _add_timing(state, "cache", started)}
    workflow.upsert_memo(
        {"cache": (CacheStatus.MISS if found.hit is None else CacheStatus.EXACT).value}
    )
    if not found.available:
        update["warnings"] = [*state.get("warnings", []), "cache unavailable: treated as a miss"]
    if found.hit is None:
        update["cache"] = CacheStatus.MISS
        return update
    timings = update["timings"]
    timings.total = _elapsed_ms(state["started_at"])
    info = workflow.info()
    hit = found.hit.model_copy(
        update={
            "cache": CacheStatus.EXACT,
            "timings_ms": timings,
            "route": found.hit.route.model_copy(update={"tier": Tier.CACHE}),
            "workflow_id": info.workflow_id,
            "run_id": info.run_id,
            "warnings": [],
        }
    )
    return {**update, "cache": CacheStatus.EXACT, "result": hit}


async def route(state: AgentState) -> dict[str, Any]:
    request = state["request"]
    _stage(state, "routing")
    started = workflow.now()
    routed: RouteResult = await workflow.execute_activity(
        "route",
        RouteInput(
            question=request.question,
            tenant=request.tenant,
            conversation_id=request.conversation_id,
        ),
        result_type=RouteResult,
        task_queue=state["inference_queue"],
        start_to_close_timeout=timeouts.ROUTE_TIMEOUT,
        retry_policy=timeouts.MODEL_RETRY,
        summary="route",
    )
    # Shown on the run's page in the Web UI, so ops can see at a glance what was decided.
    workflow.upsert_memo(
        {
            "intent": routed.route.intent,
            "tier": routed.route.tier.value,
            "confidence": routed.route.confidence,
        }
    )
    state["progress"].route = routed.route
    update: dict[str, Any] = {
        "route": routed.route,
        "confident": routed.confident and routed.draft_plan is not None,
        "timings": _add_timing(state, "route", started),
    }
    if routed.draft_plan is not None:
        update["plan"] = routed.draft_plan
    return update


async def plan(state: AgentState) -> dict[str, Any]:
    request = state["request"]
    attempt = state.get("replans", 0)
    _stage(state, f"planning (round {attempt})")
    started = workflow.now()
    planned: PlanResult = await workflow.execute_activity(
        "plan",
        PlanInput(
            question=request.question,
            route=state["route"],
            attempt=attempt,
            previous_steps=[s for s in state.get("steps", []) if s.attempt == attempt - 1],
            plan_error=state.get("plan_error"),
        ),
        result_type=PlanResult,
        task_queue=state["inference_queue"],
        start_to_close_timeout=timeouts.PLAN_TIMEOUT,
        retry_policy=timeouts.MODEL_RETRY,
        summary=f"plan round {attempt}",
    )
    return {"plan": planned.plan, "timings": _add_timing(state, "plan", started)}


async def execute(state: AgentState) -> dict[str, Any]:
    started = workflow.now()
    attempt = state.get("replans", 0)
    _stage(state, f"running {len(state['plan'].steps)} steps (round {attempt})")
    progress = state["progress"]
    progress.replans = attempt
    outcomes, plan_error = await run_plan(
        state["plan"],
        tool_queue=state["tool_queue"],
        max_concurrency=state["request"].options.max_concurrency,
        attempt=attempt,
        # The scheduler updates these outcome objects in place: the query sees them live.
        on_start=lambda live: setattr(progress, "steps", [*state.get("steps", []), *live]),
    )
    return {
        "steps": [*state.get("steps", []), *outcomes],
        "plan_error": plan_error,
        "timings": _add_timing(state, "tools", started),
    }


async def join(state: AgentState) -> dict[str, Any]:
    request = state["request"]
    replans = state.get("replans", 0)
    current = [s for s in state.get("steps", []) if s.attempt == replans]
    if state.get("plan_error") is None and all(s.status == StepStatus.SUCCEEDED for s in current):
        # Nothing to judge: every step succeeded. Asking a model would only add latency.
        return {"decision": JoinDecision.FINISH}
    started = workflow.now()
    joined: JoinResult = await workflow.execute_activity(
        "join",
        JoinInput(
            question=request.question,
            plan=state["plan"],
            steps=current,
            plan_error=state.get("plan_error"),
            replans=replans,
            max_replans=request.options.max_replans,
        ),
        result_type=JoinResult,
        task_queue=state["inference_queue"],
        start_to_close_timeout=timeouts.JOIN_TIMEOUT,
        retry_policy=timeouts.MODEL_RETRY,
        summary="join",
    )
    # The planner, not the scheduler, may spend a replan; the cap is enforced here too.
    replan = joined.decision == JoinDecision.REPLAN and replans < request.options.max_replans
    update: dict[str, Any] = {
        "decision": JoinDecision.REPLAN if replan else JoinDecision.FINISH,
        "timings": _add_timing(state, "plan", started),
    }
    if replan:
        update["replans"] = replans + 1
    return update


async def respond(state: AgentState) -> dict[str, Any]:
    request = state["request"]
    _stage(state, "writing the answer")
    started = workflow.now()
    replans = state.get("replans", 0)
    answered: RespondResult = await workflow.execute_activity(
        "respond",
        RespondInput(
            question=request.question,
            route=state["route"],
            steps=[s for s in state.get("steps", []) if s.attempt == replans],
            plan_error=state.get("plan_error"),
            run_id=workflow.info().run_id,
        ),
        result_type=RespondResult,
        task_queue=state["inference_queue"],
        start_to_close_timeout=timeouts.RESPOND_TIMEOUT,
        retry_policy=timeouts.MODEL_RETRY,
        summary="respond",
    )
    return {"answer": answered.answer, "timings": _add_timing(state, "respond", started)}


async def store(state: AgentState) -> dict[str, Any]:
    request = state["request"]
    info = workflow.info()
    timings = state.get("timings", Timings()).model_copy()
    timings.total = _elapsed_ms(state["started_at"])
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
        workflow_id=info.workflow_id,
        run_id=info.run_id,
    )
    _stage(state, "recording the run")
    # Local for the same reason as the lookup; it is durable all the same (a marker
    # in history) and idempotent, so a retry after a crash records the run once.
    await workflow.execute_local_activity(
        "store",
        StoreInput(
            tenant=request.tenant,
            question=request.question,
            result=result,
            use_cache=request.options.use_cache,
        ),
        result_type=StoreResult,
        start_to_close_timeout=timeouts.STORE_TIMEOUT,
        retry_policy=timeouts.STORE_RETRY,
        summary="store run",
    )
    final_timings = timings.model_copy(update={"total": _elapsed_ms(state["started_at"])})
    return {"result": result.model_copy(update={"timings_ms": final_timings})}


# Conditional edges. LangGraph runs sync callables in an executor, which the
# workflow event loop refuses, so every edge function is `async def`.
async def after_cache(state: AgentState) -> str:
    return "hit" if state.get("result") is not None else "miss"


async def after_route(state: AgentState) -> str:
    return "confident" if state.get("confident") else "unsure"


async def after_join(state: AgentState) -> str:
    return "replan" if state.get("decision") == JoinDecision.REPLAN else "finish"
