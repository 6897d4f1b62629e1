"""The graph's conditional edges: where a run goes after the cache, the route and join."""

from __future__ import annotations

from agentkeel.schemas.model_calls import JoinDecision
from agentkeel.schemas.result import CacheStatus
from agentkeel.workflows.state import AgentState


# Conditional edges. LangGraph runs sync callables in an executor, which the
# workflow event loop refuses, so every edge function is `async def`.
async def at_start(state: AgentState) -> str:
    if state.get("resume"):
        return "resume"
    # A request with its own plan asks no planner, and no cached path may stand in for it.
    return "given" if state["request"].plan is not None else "new"


async def after_execute(state: AgentState) -> str:
    if state.get("suspended"):
        return "continue_as_new"
    # A given plan is not replanned: what it did is answered as it is.
    return "answer" if state.get("given") else "judge"


async def after_cache(state: AgentState) -> str:
    if state.get("result") is not None:
        return "hit"
    return "plan" if state.get("cache") == CacheStatus.PLAN else "miss"


async def after_route(state: AgentState) -> str:
    if state.get("confident"):
        return "confident"
    return "planned" if state.get("planned_ahead") else "unsure"


async def after_join(state: AgentState) -> str:
    return "replan" if state.get("decision") == JoinDecision.REPLAN else "finish"
