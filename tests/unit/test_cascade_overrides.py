"""A cascade planning beside its router counts one override, from the plan's intent (scripted
engines, no run)."""

from __future__ import annotations

import asyncio

import pytest
from temporalio.testing import ActivityEnvironment

from agentkeel.activities import plan_ahead
from agentkeel.activities.model_calls import InferenceActivities
from agentkeel.activities.plan_ahead import UnsureForecast
from agentkeel.inference.llm import cascade as cascade_module
from agentkeel.schemas.model_calls import RouteInput
from agentkeel.schemas.route import ConfidenceBasis, Tier
from tests.support.fakes import STATUS_PLAN, cascade


async def test_a_cascade_planning_beside_the_router_counts_one_override_from_its_intent(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    counted: list[tuple[str, str]] = []
    for module in (plan_ahead, cascade_module):
        monkeypatch.setattr(module, "count_override", lambda *pair: counted.append(pair))
    policy, _light, heavy = cascade(
        {"refund": 0.55, "order_status": 0.45}, [{**STATUS_PLAN, "intent": "order_status"}]
    )
    activities = InferenceActivities(policy, forecast=UnsureForecast("always"))
    question = RouteInput(question="where's my parcel for 1001")
    routed = await asyncio.wait_for(ActivityEnvironment().run(activities.route, question), 10)

    assert routed.planned is not None and routed.planned.route is not None
    route = routed.planned.route
    assert (route.intent, route.tier) == ("order_status", Tier.HEAVY)
    assert (route.router_intent, route.overridden_intent) == ("refund", "refund")
    assert route.basis == ConfidenceBasis.LOGPROBS
    assert route.measured_confidence == pytest.approx(routed.route.confidence)
    assert route.reason.startswith("escalated to the heavy model")
    assert counted == [("refund", "order_status")]  # once, and not from the stand-in
    assert len(heavy.prompts) == 1  # the plan, started beside the router
