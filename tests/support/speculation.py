"""Speculative reads and deadlines: the question, plans and stand-ins their tests share."""

from __future__ import annotations

import asyncio
from typing import Any

from temporalio import activity
from temporalio.exceptions import ApplicationError

from agentkeel.examples.shop.tools import GetOrderInput, Order, OrderItem
from agentkeel.inference.llm.cascade import CascadePolicy
from agentkeel.inference.llm.policy import LlmPolicy
from agentkeel.schemas.route import Tier
from tests.support.fakes import FakeEngine

QUESTION = "where's my parcel for order 1001"

UNSURE = {"refund": 0.55, "order_status": 0.45}

STEPS: list[dict[str, Any]] = [
    {"id": "s1", "tool": "get_order", "args": {"order_id": 1001}},
    {
        "id": "s2",
        "tool": "track_shipment",
        "args": {"tracking_number": "$s1.tracking_number"},
        "optional": True,
    },
]

KB_ONLY: list[dict[str, Any]] = [
    {"id": "s1", "tool": "search_kb", "args": {"query": "shipping times"}}
]


def cascade(steps: list[dict[str, Any]], *, heavy_s: float) -> CascadePolicy:
    light = FakeEngine(
        "light-fake", label_probs=UNSURE, documents=[{"rationale": "scripted", "steps": steps}]
    )
    heavy = FakeEngine(
        "heavy-fake",
        documents=[{"intent": "order_status", "rationale": "scripted", "steps": steps}],
        answer="Order 1001 is on its way.",
        delay_s=heavy_s,
    )
    return CascadePolicy(
        LlmPolicy(light, tier=Tier.LIGHT, threshold=0.7),
        LlmPolicy(heavy, tier=Tier.HEAVY, threshold=0.7),
    )


class StandInOrders:
    """Stand-in for `get_order`: its first `failing` calls fail (for good, or retried:
    `final`), and each call takes `hold_s`; `cancelled` counts the calls cancelled while
    they ran."""

    def __init__(self, *, failing: int = 0, hold_s: float = 0.05, final: bool = True) -> None:
        """`final`: the failures are non-retryable (else retried, as a flaky source's)."""
        self.calls = self.cancelled = 0
        self.failing, self.hold_s, self.final = failing, hold_s, final

    @activity.defn(name="get_order")
    async def get_order(self, args: GetOrderInput) -> Order:
        self.calls += 1
        if self.calls <= self.failing:
            raise ApplicationError(
                "orders database away", type="Unavailable", non_retryable=self.final
            )
        try:
            await asyncio.sleep(self.hold_s)
        except asyncio.CancelledError:
            self.cancelled += 1
            raise
        item = OrderItem(sku="SKU-00001", product_name="stand-in", quantity=1, unit_price_cents=1)
        return Order(
            order_id=args.order_id,
            customer_id=1,
            status="shipped",
            total_cents=1,
            refunded_cents=0,
            placed_at="2026-01-01T00:00:00Z",
            items=[item],
            tracking_number="TRK0000001001",
        )


SURE = {"order_status": 0.97}


def confident(steps: list[dict[str, Any]], *, delay_s: float) -> LlmPolicy:
    """A router sure of itself whose draft plan is `steps`, taking `delay_s` a call."""
    engine = FakeEngine(
        "light-fake",
        label_probs=SURE,
        documents=[{"rationale": "scripted", "steps": steps}],
        answer="Order 1001 has shipped.",
        delay_s=delay_s,
    )
    return LlmPolicy(engine, tier=Tier.LIGHT, threshold=0.7)


ORDER = {"id": "s1", "tool": "get_order", "args": {"order_id": 1001}}
STALE = {"id": "s2", "tool": "search_kb", "args": {"query": "parcel lost in transit"}}
REJECTED = {  # names a step that does not exist: validation refuses the plan, it is decoded again
    "intent": "order_status",
    "rationale": "first try",
    "steps": [ORDER, STALE, {"id": "s3", "tool": "search_kb", "args": {"query": "$s9.status"}}],
}
FINAL = {
    "intent": "order_status",
    "rationale": "second try",
    "steps": [ORDER, {"id": "s2", "tool": "search_kb", "args": {"query": "$s1.status"}}],
}


def streaming_cascade() -> CascadePolicy:
    """An unsure router, and a heavy planner that streams `REJECTED` then `FINAL`, each
    decode spread over 0.6 s (`workflows.plan_stream`)."""
    light = FakeEngine("light-fake", label_probs=UNSURE, documents=[FINAL])
    heavy = FakeEngine(
        "heavy-fake",
        documents=[REJECTED, FINAL],
        answer="Order 1001 is on its way.",
        delay_s=0.6,  # per decode, spread over its pieces
        streams_json=True,
    )
    return CascadePolicy(LlmPolicy(light, tier=Tier.LIGHT), LlmPolicy(heavy, tier=Tier.HEAVY))
