"""Fewer sequential stages, on scripted planners: answer templates, and a plan made beside the
router (cancelled, told against the router's route, planned ahead only where it pays)."""

from __future__ import annotations

import asyncio

import pytest
from temporalio.testing import ActivityEnvironment

from agentkeel.activities import plan_ahead
from agentkeel.activities.model_calls import InferenceActivities
from agentkeel.activities.plan_ahead import UnsureForecast
from agentkeel.schemas.model_calls import PlanInput, PlanResult, RouteInput, RouteResult
from agentkeel.schemas.plan.answer_template import fill, template_problem
from agentkeel.schemas.plan.model import Plan
from agentkeel.schemas.plan.references import PlanValidationError
from agentkeel.schemas.plan.validation import validate_plan
from agentkeel.schemas.route import ConfidenceBasis, Route, Tier
from agentkeel.schemas.tools import TOOLS
from tests.support.fakes import FakeScriptedPolicy
from tests.support.plans import ORDER_AND_TRACKING


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
    for unsure in (True, True, True, False):
        forecast.observe("a", unsure=unsure, scope="shop")
    assert forecast.expects_unsure("a", "shop")
    for _ in range(10):
        forecast.observe("a", unsure=False, scope="shop")
    assert not forecast.expects_unsure("a", "shop")
    assert UnsureForecast("off").expects_unsure("a", "shop") is False
    assert UnsureForecast("always").expects_unsure("a", "shop") is True


def test_a_tenant_too_new_for_a_history_is_forecast_from_its_deployments() -> None:
    forecast = UnsureForecast("auto", above=0.5, window=10)
    for tenant in ("a", "b", "c"):  # one route each: no tenant has a history of its own
        forecast.observe(tenant, unsure=True, scope="shop")
    assert forecast.expects_unsure("new", "shop")
    forecast.observe("d", unsure=False, scope="bank")
    forecast.observe("new", unsure=False, scope="shop")
    forecast.observe("new", unsure=False, scope="shop")
    assert forecast.expects_unsure("new", "shop")  # two of its own: the deployment's 3 of 5
    forecast.observe("new", unsure=False, scope="shop")
    assert not forecast.expects_unsure("new", "shop")  # its own three now decide
    assert not forecast.expects_unsure("other", "shop")  # the deployment's: 3 of 6
    # A deployment with too few routes goes by `unseen`; another deployment's say nothing.
    assert forecast.expects_unsure("x", "bank")
    assert not UnsureForecast("auto", unseen="after").expects_unsure("x", "bank")
    sure = UnsureForecast("auto", above=0.5)
    for tenant in ("a", "b", "c"):
        sure.observe(tenant, unsure=False, scope="shop")
    assert not sure.expects_unsure("new", "shop")


def test_a_new_deployment_plans_ahead_for_a_few_routes_at_a_time_only() -> None:
    """On `unseen` alone (a deployment with fewer than 3 routes) a worker starts at most 3
    plans ahead at once: a burst of first requests does not start a planner for each."""
    forecast = UnsureForecast("auto")
    held = [forecast.plan_ahead(f"t{i}", "new") for i in range(5)]
    assert [r is not None for r in held] == [True, True, True, False, False]
    first = held[0]
    assert first is not None
    first(None)  # that plan is done: its place is free again
    assert forecast.plan_ahead("t5", "new") is not None
    # Once the deployment has a history, it decides, and nothing is held.
    for tenant in ("a", "b", "c"):
        forecast.observe(tenant, unsure=True, scope="new")
    assert all(forecast.plan_ahead(f"u{i}", "new") is not None for i in range(5))
    assert UnsureForecast("auto", unseen="after").plan_ahead("t", "new") is None
    assert UnsureForecast("off").plan_ahead("t", "new") is None


class _FailingPlanner(FakeScriptedPolicy):
    async def plan(self, request: PlanInput) -> PlanResult:
        raise RuntimeError("the heavy model server went away")


async def test_a_plan_ahead_that_fails_leaves_the_route_and_plans_after_it() -> None:
    activities = InferenceActivities(_FailingPlanner([]), forecast=UnsureForecast("always"))
    routed = await ActivityEnvironment().run(activities.route, RouteInput(question="order 1001"))
    assert not routed.confident and routed.planned is None  # the plan stage runs, as before


class _OrderedPolicy(_PlannerThatReads):
    """Records which of its two generations was asked first."""

    def __init__(self) -> None:
        super().__init__("order_status")
        self.asked: list[str] = []

    async def route(self, request: RouteInput) -> RouteResult:
        self.asked.append("route")
        return await super().route(request)

    async def plan(self, request: PlanInput) -> PlanResult:
        self.asked.append("plan")
        return await super().plan(request)


async def test_the_router_is_asked_before_the_planner_beside_it() -> None:
    """A server with one slot serves its requests in turn: asked first, the short route
    comes back first, and a confident one cancels the plan before it generates."""
    policy = _OrderedPolicy()
    activities = InferenceActivities(policy, forecast=UnsureForecast("always"))
    routed = await ActivityEnvironment().run(activities.route, RouteInput(question="order 1001"))
    assert routed.planned is not None
    assert policy.asked == ["route", "plan"]
