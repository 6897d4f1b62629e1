"""A model for the shop's order questions on the token-timed server (`bench.token_server`, a
fake at the model boundary): the ideal model's route (`bench.ideal_model`, with the
certainty asked for), a plan that reads order 1001 and tracks its parcel (or, for the
policy question, searches the help center), and a plain answer; the plan writes no
answer template, so the run's respond step is a model call."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from agentkeel.inference.engines.openai_compat import OpenAICompatEngine
from agentkeel.inference.llm.cascade import CascadePolicy
from agentkeel.inference.llm.policy import LlmPolicy
from agentkeel.schemas.result import AgentResult
from agentkeel.schemas.route import Tier
from bench.ideal_model import IdealShapeModel, _response_schema
from bench.ideal_plan import _plan_document
from bench.peer_cases import Step
from bench.token_server import Speed, TokenTimedServer, serving
from bench.token_text import Reply

ORDER_QUESTION = "Where is order 1001 and its parcel?"
POLICY_QUESTION = "What is your return policy for damaged items?"
POLICY_STEPS = [Step("s1", "search_kb", {"query": "return policy damaged items"})]
ORDER_STEPS = [
    Step("s1", "get_order", {"order_id": 1001}),
    Step("s2", "track_shipment", {"tracking_number": "$s1.tracking_number"}, after=("s1",)),
]


@dataclass
class ShopOrderModel:
    """`bench.token_server.Scenario` of the order question."""

    route_confidence: float = 0.5
    ideal: IdealShapeModel = field(init=False)

    def __post_init__(self) -> None:
        self.ideal = IdealShapeModel(route_confidence=self.route_confidence)

    def reply(self, body: dict[str, Any]) -> Reply:
        schema = _response_schema(body)
        if schema is not None and "steps" in schema.get("properties", {}):  # a plan
            asked = json.dumps(body.get("messages", []))
            steps = POLICY_STEPS if "return policy" in asked else ORDER_STEPS
            document = _plan_document(steps, schema)
            document.pop("answer", None)
            return Reply(text=json.dumps(document))
        return self.ideal.reply(body)


@asynccontextmanager
async def shop_cascade(
    route_confidence: float = 0.5,
) -> AsyncIterator[tuple[CascadePolicy, TokenTimedServer]]:
    """The LLM cascade (both tiers on the token server's `ideal` model, through the real
    OpenAI-compatible engine) and the server, whose log counts every token it served."""
    async with serving(ShopOrderModel(route_confidence), Speed("test", 0.0, 0.0)) as (
        url,
        server,
    ):
        light = OpenAICompatEngine(base_url=url, model="ideal", api="chat")
        heavy = OpenAICompatEngine(base_url=url, model="ideal", api="chat")
        await light.start()
        await heavy.start()
        try:
            yield (
                CascadePolicy(LlmPolicy(light, tier=Tier.LIGHT), LlmPolicy(heavy, tier=Tier.HEAVY)),
                server,
            )
        finally:
            await light.close()
            await heavy.close()


def budget_past_the_route(probe: AgentResult) -> dict[str, Any]:
    """A run budget by what an unbudgeted run of the order question (`probe`) used: its
    route alone reaches `degrade_at`, and any call after that spends it."""
    assert probe.usage is not None
    routed = next(m for m in probe.usage.by_model if m.tier is Tier.LIGHT).total_tokens
    return {"tokens": routed + 1, "degrade_at": routed / (routed + 1)}
