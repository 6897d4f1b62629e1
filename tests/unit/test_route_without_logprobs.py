"""The cascade routes on a hosted model that returns no logprobs: the router's reported
confidence against the threshold (`AGENTKEEL_ROUTE_CONFIDENCE=reported`), over the real
OpenAI-compatible engine and a fake server as strict as OpenAI's structured outputs."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

pytest.importorskip("openai", reason="openai is not installed (the llm-cpu or gpu extra)")

from agentkeel.inference.engines.openai_compat import OpenAICompatEngine
from agentkeel.inference.llm.cascade import CascadePolicy
from agentkeel.inference.llm.policy import LlmPolicy
from agentkeel.inference.llm.route_reading import RouteConfidence
from agentkeel.schemas.model_calls import PlanInput, RouteInput
from agentkeel.schemas.route import ConfidenceBasis, Tier
from tests.support.strict_server import MODEL, FakeStrictHostedServer, serving

SURE = "Where is order 1001?"
UNSURE = "My parcel, the one from last week, what about it?"


@pytest.fixture
async def hosted() -> AsyncIterator[tuple[FakeStrictHostedServer, str]]:
    server = FakeStrictHostedServer(
        {"order 1001": 9, "parcel": 3},
        intent="order_status",
        plan_step={"get_order": {"order_id": 1001}},
    )
    async with serving(server) as url:
        yield server, url


async def _cascade(url: str, source: RouteConfidence) -> CascadePolicy:
    def tier(tier: Tier) -> LlmPolicy:
        engine = OpenAICompatEngine(base_url=url, model=MODEL, api="chat")
        return LlmPolicy(engine, tier=tier, threshold=0.7, route_confidence=source)

    light, heavy = tier(Tier.LIGHT), tier(Tier.HEAVY)
    for policy in (light, heavy):
        await policy.engine.start()
    return CascadePolicy(light, heavy)


async def test_a_sure_router_keeps_the_request_on_the_light_model(
    hosted: tuple[FakeStrictHostedServer, str],
) -> None:
    server, url = hosted
    cascade = await _cascade(url, "reported")
    routed = await cascade.route(RouteInput(question=SURE))
    assert routed.confident and routed.route.tier == Tier.LIGHT
    assert (routed.route.basis, routed.route.confidence) == (ConfidenceBasis.REPORTED, 0.9)
    assert "reported=0.90 >= threshold 0.70" in routed.route.reason
    assert routed.draft_plan is not None
    assert [s.tool for s in routed.draft_plan.steps] == ["get_order"]
    assert server.refused == [] and server.schemas, "every schema sent was strict"
    assert cascade.stats.heavy_share == 0.0


async def test_an_unsure_router_escalates_and_the_heavy_model_plans(
    hosted: tuple[FakeStrictHostedServer, str],
) -> None:
    server, url = hosted
    cascade = await _cascade(url, "reported")
    routed = await cascade.route(RouteInput(question=UNSURE))
    assert not routed.confident and routed.route.tier == Tier.HEAVY
    assert routed.route.confidence == 0.3
    planned = await cascade.plan(PlanInput(question=UNSURE, route=routed.route))
    assert planned.error is None and planned.tier == Tier.HEAVY
    assert [s.tool for s in planned.plan.steps] == ["get_order"]
    assert server.refused == []


async def test_with_logprobs_as_the_source_the_same_server_escalates_everything(
    hosted: tuple[FakeStrictHostedServer, str],
) -> None:
    """What `reported` replaces: the label is read, but no logprobs come back to measure it,
    so the declared rule (`escalate`) sends even the sure question to the heavy model."""
    server, url = hosted
    cascade = await _cascade(url, "logprobs")
    routed = await cascade.route(RouteInput(question=SURE))
    assert routed.route.basis == ConfidenceBasis.UNMEASURED
    assert routed.route.tier == Tier.HEAVY
    assert server.asked_logprobs >= 1 and server.refused == []
