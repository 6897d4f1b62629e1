"""Fewer sequential stages: an answer written with the plan, and a plan made beside the router.

Both change how many model stages a run waits for, never what it does: the tests check
which activities a run's history holds and that the answer and steps are what they were.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from temporalio.client import WorkflowHistory
from temporalio.testing import ActivityEnvironment

from agentkeel.activities import plan_ahead
from agentkeel.activities.model_calls import InferenceActivities
from agentkeel.activities.plan_ahead import UnsureForecast
from agentkeel.schemas.model_calls import PlanInput, PlanResult, RouteInput, RouteResult
from agentkeel.schemas.plan.answer_template import fill, template_problem
from agentkeel.schemas.plan.model import Plan
from agentkeel.schemas.plan.references import PlanValidationError
from agentkeel.schemas.plan.validation import validate_plan
from agentkeel.schemas.result import StepStatus
from agentkeel.schemas.route import ConfidenceBasis, Route, Tier
from agentkeel.schemas.tools import TOOLS
from tests.support.agent_stack import StackFactory
from tests.support.fakes import FakeScriptedPolicy


def stages(history: WorkflowHistory) -> list[str]:
    """The activities the run waited for, in order: the model steps it sent to a queue and
    every tool call, on a queue or as a local activity (not a declined local offer)."""
    waited = []
    for e in history.events:
        if e.HasField("activity_task_scheduled_event_attributes"):
            waited.append(e.activity_task_scheduled_event_attributes.activity_type.name)
        elif e.HasField("marker_recorded_event_attributes"):
            details = e.marker_recorded_event_attributes.details
            if "data" in details:
                kind = json.loads(details["data"].payloads[0].data).get("activity_type")
                if kind in TOOLS:
                    waited.append(kind)
    return waited


ORDER_AND_TRACKING: dict[str, Any] = {
    "steps": [
        {"id": "s1", "tool": "get_order", "args": {"order_id": 1001}},
        {"id": "s2", "tool": "track_shipment", "args": {"tracking_number": "$s1.tracking_number"}},
    ],
    "answer": "Order {$s1.order_id} ({$s1.total_cents|money}) is {$s1.status}; "
    "its parcel is {$s2.status}.",
}


def test_a_template_is_filled_with_plain_values_only() -> None:
    outputs = {"s1": {"id": 7, "total": 1999, "tags": ["a", "b"], "ok": True, "x": {"y": 1}}}
    assert fill("#{$s1.id}: {$s1.total|money} {$s1.tags} {$s1.ok}", outputs) == (
        "#7: $19.99 a, b yes"
    )
    assert fill("braces {stay} as text", {}) == "braces {stay} as text"
    # A record, a missing field or step, money of a string: the respond step must write it.
    for template in ("{$s1.x}", "{$s1.nope}", "{$s9.id}", "{$s1.tags|money}"):
        assert fill(template, outputs) is None, template


def test_a_template_naming_no_step_of_the_plan_is_a_named_plan_error() -> None:
    assert template_problem("{$s1.a} {$item.b}", frozenset({"s1"})) is not None
    assert template_problem("{$s1.a|shout}", frozenset({"s1"})) is not None
    bad = Plan.model_validate({**ORDER_AND_TRACKING, "answer": "Order {$s3.status}"})
    with pytest.raises(PlanValidationError) as raised:
        validate_plan(bad, TOOLS)
    assert "$s3.status" in raised.value.message


async def test_an_answer_written_with_the_plan_needs_no_respond_call(
    make_stack: StackFactory,
) -> None:
    stack = await make_stack(policy=FakeScriptedPolicy([ORDER_AND_TRACKING]), plan_ahead="off")
    handle = await stack.start("Where is order 1001?")
    result = await handle.result()
    assert stages(await handle.fetch_history()) == [
        "route",
        "plan",
        "get_order",
        "track_shipment",
    ]
    order, parcel = result.steps[0].output, result.steps[1].output
    assert result.answer == (
        f"Order 1001 (${order['total_cents'] / 100:,.2f}) is {order['status']}; "
        f"its parcel is {parcel['status']}."
    )
    assert result.timings_ms.ttft == result.timings_ms.total  # it arrived whole


async def test_a_failed_step_is_explained_by_the_respond_step_not_the_template(
    make_stack: StackFactory,
) -> None:
    missing = {
        "steps": [{"id": "s1", "tool": "get_order", "args": {"order_id": 999999}}],
        "answer": "Order {$s1.order_id} is {$s1.status}.",
    }
    stack = await make_stack(policy=FakeScriptedPolicy([missing]), plan_ahead="off")
    handle = await stack.start("Where is order 999999?", options={"max_replans": 0})
    result = await handle.result()
    assert result.steps[0].status == StepStatus.FAILED
    assert stages(await handle.fetch_history())[-1] == "respond"
    assert "{$" not in result.answer and "999999" in result.answer


async def test_an_unsure_route_planned_beside_the_router_skips_the_plan_stage(
    make_stack: StackFactory,
) -> None:
    policy = FakeScriptedPolicy([ORDER_AND_TRACKING])
    stack = await make_stack(policy=policy, plan_ahead="always")
    handle = await stack.start("Where is order 1001?")
    result = await handle.result()
    assert stages(await handle.fetch_history()) == [
        "route",
        "get_order",
        "track_shipment",
    ]
    assert [s.status for s in result.steps] == [StepStatus.SUCCEEDED] * 2
    assert "Order 1001" in result.answer
    assert len(policy.plan_requests) == 1
    assert policy.plan_requests[0].route.tier == Tier.HEAVY  # it read the request itself


class _SlowPlanner(FakeScriptedPolicy):
    """Confident routes; a planner that would take long and records being cancelled."""

    def __init__(self) -> None:
        super().__init__([ORDER_AND_TRACKING])
        self.cancelled = 0

    async def route(self, request: RouteInput) -> RouteResult:
        await asyncio.sleep(0.05)  # the planner beside it has started by now
        route = Route(intent="order_status", confidence=0.99, tier=Tier.RULES)
        return RouteResult(route=route, confident=True, draft_plan=Plan(**ORDER_AND_TRACKING))

    async def plan(self, request: PlanInput) -> PlanResult:
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            self.cancelled += 1
            raise
        return await super().plan(request)


async def test_a_confident_route_cancels_the_plan_started_beside_it() -> None:
    policy = _SlowPlanner()
    activities = InferenceActivities(policy, forecast=UnsureForecast("always"))
    routed = await asyncio.wait_for(
        ActivityEnvironment().run(activities.route, RouteInput(question="order 1001")), 5
    )
    await asyncio.sleep(0)  # let the cancellation land
    assert routed.confident and routed.planned is None
    assert policy.cancelled == 1 and policy.plan_requests == []


class _PlannerThatReads(FakeScriptedPolicy):
    """Unsure routes with a measured probability; a planner that tells its own reading
    against the route it was given, as the heavy tier does (`inference.llm.policy`)."""

    def __init__(self, planned_intent: str) -> None:
        super().__init__([ORDER_AND_TRACKING])
        self.planned_intent = planned_intent

    async def route(self, request: RouteInput) -> RouteResult:
        route = Route(
            intent="order_status", confidence=0.42, basis=ConfidenceBasis.LOGPROBS, tier=Tier.LIGHT
        )
        return RouteResult(route=route, confident=False)

    async def plan(self, request: PlanInput) -> PlanResult:
        planned = await super().plan(request)
        given = request.route
        read = Route(
            intent=self.planned_intent,
            confidence=given.confidence,
            basis=given.basis,
            tier=Tier.HEAVY,
            router_intent=given.intent,
            overridden_intent=given.intent if self.planned_intent != given.intent else None,
            reason=f"overriding the router's {given.intent} ({given.confidence_told})",
        )
        return planned.model_copy(update={"route": read})


@pytest.mark.parametrize(
    ("planned_intent", "overridden"), [("order_status", None), ("refund", "order_status")]
)
async def test_a_plan_made_beside_the_router_is_told_against_the_routers_measured_route(
    planned_intent: str, overridden: str | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    counted: list[tuple[str, str]] = []
    monkeypatch.setattr(plan_ahead, "count_override", lambda *pair: counted.append(pair))
    activities = InferenceActivities(
        _PlannerThatReads(planned_intent), forecast=UnsureForecast("always")
    )
    routed = await asyncio.wait_for(
        ActivityEnvironment().run(activities.route, RouteInput(question="order 1001")), 5
    )
    assert routed.planned is not None and routed.planned.route is not None
    route = routed.planned.route
    assert (route.intent, route.tier) == (planned_intent, Tier.HEAVY)
    # Not the stand-in the planner started with (intent "uncertain", confidence 0).
    assert (route.measured_confidence, route.basis) == (0.42, ConfidenceBasis.LOGPROBS)
    assert (route.router_intent, route.overridden_intent) == ("order_status", overridden)
    assert "uncertain" not in route.reason
    assert ("p=0.42" in route.reason) == (overridden is not None)
    # The override metric counts the router's intent, once, and only a real override.
    assert counted == ([(overridden, planned_intent)] if overridden else [])


def test_auto_plans_ahead_only_for_a_tenant_whose_routes_were_mostly_unsure() -> None:
    forecast = UnsureForecast("auto", above=0.5, window=10)
    assert not forecast.expects_unsure("a")  # nothing seen yet
    for unsure in (True, True, True, False):
        forecast.observe("a", unsure=unsure)
    assert forecast.expects_unsure("a")
    assert not forecast.expects_unsure("b")
    for _ in range(10):
        forecast.observe("a", unsure=False)
    assert not forecast.expects_unsure("a")
    assert UnsureForecast("off").expects_unsure("a") is False
    assert UnsureForecast("always").expects_unsure("a") is True


class _FailingPlanner(FakeScriptedPolicy):
    async def plan(self, request: PlanInput) -> PlanResult:
        raise RuntimeError("the heavy model server went away")


async def test_a_plan_ahead_that_fails_leaves_the_route_and_plans_after_it() -> None:
    activities = InferenceActivities(_FailingPlanner([]), forecast=UnsureForecast("always"))
    routed = await ActivityEnvironment().run(activities.route, RouteInput(question="order 1001"))
    assert not routed.confident and routed.planned is None  # the plan stage runs, as before
