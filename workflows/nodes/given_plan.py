"""The node of a request that brings its own plan: no route, no planner, straight to it.

What the plan may do is decided here, from the request alone: its side effects are the
ones it asks for, and `workflows.request_checks` has already refused them unless the
actor's role may send such plans. The scheduler then holds it to the same admission,
approval and limit rules as any plan.
"""

from __future__ import annotations

from typing import Any

from agentkeel.schemas.result import CacheStatus
from agentkeel.schemas.route import ConfidenceBasis, Route, Tier
from agentkeel.schemas.tools.catalog import SIDE_EFFECT_TOOLS
from agentkeel.workflows.state import AgentState
from agentkeel.workflows.visibility import publish_route, stage

GIVEN_PLAN_INTENT = "given_plan"


async def given_plan(state: AgentState) -> dict[str, Any]:
    stage(state, "running the given plan")
    plan = state["request"].plan
    assert plan is not None  # (the start edge sends only such requests here)
    tools = sorted({step.tool for step in plan.steps})
    state["context"].allowed_effects = frozenset(t for t in tools if t in SIDE_EFFECT_TOOLS)
    route = Route(
        intent=GIVEN_PLAN_INTENT,
        confidence=1.0,
        basis=ConfidenceBasis.GIVEN,
        tier=Tier.CALLER,
        tools=tools,
        reason="the request carries its plan",
    )
    publish_route(state, route)
    return {
        "route": route,
        "plan": plan,
        "confident": True,
        "given": True,
        "cache": CacheStatus.BYPASS,  # never asked: a plan the caller brings always runs
    }
