"""The router cascade over scripted engines: confident routes stay on the light model, unsure
ones escalate and count overrides, replans keep their tier; answers stream to the sink."""

from __future__ import annotations

from agentkeel.examples.shop.rules.policy import RulesPolicy
from agentkeel.inference.llm.cascade import CascadePolicy
from agentkeel.inference.llm.policy import LlmPolicy
from agentkeel.schemas.model_calls import PlanInput, RespondInput, RouteInput
from agentkeel.schemas.route import Route, Tier
from tests.support.fakes import FakeEngine
from tests.support.plans import GOOD_PLAN


# --- cascade ---------------------------------------------------------------------------------
def _cascade(light_probs: dict[str, float], heavy_plan: dict[str, object]) -> CascadePolicy:
    light = FakeEngine("light", label_probs=light_probs, documents=[GOOD_PLAN])
    heavy = FakeEngine("heavy", documents=[heavy_plan], answer="Order 1002 has shipped.")
    return CascadePolicy(
        LlmPolicy(light, tier=Tier.LIGHT, threshold=0.7),
        LlmPolicy(heavy, tier=Tier.HEAVY, threshold=0.7),
    )


async def test_cascade_keeps_confident_routes_on_the_light_model() -> None:
    cascade = _cascade({"order_status": 0.95, "refund": 0.05}, {**GOOD_PLAN, "intent": "refund"})
    routed = await cascade.route(RouteInput(question="Where is order 1002?"))
    assert routed.confident and routed.route.tier == Tier.LIGHT
    assert (cascade.stats.routes, cascade.stats.escalated, cascade.stats.heavy_share) == (1, 0, 0)


async def test_cascade_escalates_and_counts_an_override() -> None:
    cascade = _cascade(
        {"refund": 0.55, "order_status": 0.45}, {**GOOD_PLAN, "intent": "order_status"}
    )
    routed = await cascade.route(RouteInput(question="order 1002?"))
    assert not routed.confident
    assert routed.route.reason.startswith("escalated to the heavy model")
    planned = await cascade.plan(PlanInput(question="order 1002?", route=routed.route))
    assert planned.tier == Tier.HEAVY
    assert planned.route is not None
    assert planned.route.tier == Tier.HEAVY
    assert planned.route.intent == "order_status"
    assert planned.route.overridden_intent == "refund"
    assert "overriding the router's refund" in planned.route.reason
    assert (cascade.stats.escalated, cascade.stats.overridden) == (1, 1)
    assert cascade.stats.heavy_share == 1.0
    # The escalated run is answered by the heavy model.
    answered = await cascade.respond(
        RespondInput(question="order 1002?", route=planned.route, steps=[])
    )
    assert answered.answer == "Order 1002 has shipped."


async def test_a_replan_stays_on_the_runs_tier_and_keeps_the_routers_reading() -> None:
    cascade = _cascade(
        {"refund": 0.55, "order_status": 0.45}, {**GOOD_PLAN, "intent": "order_status"}
    )
    routed = await cascade.route(RouteInput(question="order 1002?"))
    assert routed.route.tier == Tier.HEAVY  # the escalated run is the heavy tier's from here
    first = await cascade.plan(PlanInput(question="order 1002?", route=routed.route))
    assert first.route is not None
    second = await cascade.plan(PlanInput(question="order 1002?", route=first.route, attempt=1))
    assert second.route is not None and second.tier == Tier.HEAVY
    assert second.route.overridden_intent == "refund"
    assert second.route.reason == first.route.reason  # does not grow per replan
    assert cascade.stats.overridden == 1
    # A confident light run that replans stays on the light model.
    light_route = Route(intent="order_status", confidence=0.9, tier=Tier.LIGHT)
    replanned = await cascade.plan(PlanInput(question="order 1002?", route=light_route, attempt=1))
    assert replanned.tier == Tier.LIGHT


async def test_cascade_with_the_rules_router_escalates_its_unsure_routes() -> None:
    heavy = FakeEngine("heavy", documents=[{**GOOD_PLAN, "intent": "order_status"}])
    cascade = CascadePolicy(RulesPolicy(), LlmPolicy(heavy, tier=Tier.HEAVY))
    sure = await cascade.route(RouteInput(question="Where is order 1002?"))
    unsure = await cascade.route(RouteInput(question="something about my stuff"))
    assert sure.confident and sure.route.tier == Tier.RULES
    assert not unsure.confident and unsure.route.tier == Tier.HEAVY
    assert cascade.stats.heavy_share == 0.5


# --- respond ---------------------------------------------------------------------------------
async def test_respond_streams_every_piece_to_the_sink() -> None:
    engine = FakeEngine(answer="Order 1002 is on its way.")
    pieces: list[str] = []

    async def sink(text: str) -> None:
        pieces.append(text)

    route = Route(intent="order_status", confidence=0.9, tier=Tier.LIGHT)
    answered = await LlmPolicy(engine, tier=Tier.LIGHT).respond(
        RespondInput(question="Where is 1002?", route=route, steps=[]), sink
    )
    assert len(pieces) == 6
    assert "".join(pieces) == answered.answer == "Order 1002 is on its way."
    assert answered.first_token_at is not None
