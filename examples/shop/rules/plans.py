"""Plan templates of the rules policy: real multi-step DAGs with parallel and dependent steps."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from agentkeel.examples.shop.rules.intents import Entities
from agentkeel.examples.shop.tools import (
    CHECK_INVENTORY,
    CREATE_REFUND,
    FIND_CUSTOMER,
    GET_ORDER,
    LIST_ORDERS,
    SEARCH_KB,
    TRACK_SHIPMENT,
)
from agentkeel.schemas.plan.model import Condition, Plan, PlanStep, Repeat
from agentkeel.schemas.tools.timers import WAIT

REFUND_POLICY_QUERY = "refund policy"
WATCH_EVERY_S = 600.0
"""How often a watch looks again by default (a request's `watch_every_s` overrides it)."""
WATCH_FOR_S = 7 * 24 * 3600.0
"""How long a watch looks before it gives up and says so."""


class PlanBuilder:
    """Appends steps with fresh ids (`s1`, `s2`, ...) so templates compose into one DAG."""

    def __init__(self) -> None:
        self.steps: list[PlanStep] = []
        self.first: list[str] = []
        """Steps every later step comes after (a `wait` at the head of the plan)."""

    def add(
        self,
        tool: str,
        args: dict[str, Any],
        *,
        for_each: str | None = None,
        after: list[str] | None = None,
        when: Condition | None = None,
        repeat: Callable[[str], Repeat] | None = None,
    ) -> str:
        """Append a step (or find the same one); `repeat` builds its watch from its id."""
        for existing in self.steps:
            # Two intents may need the same lookup (refund + status both read the order).
            if (existing.tool, existing.args, existing.for_each) == (tool, args, for_each):
                return existing.id
        step_id = f"s{len(self.steps) + 1}"
        self.steps.append(
            PlanStep(
                id=step_id,
                tool=tool,
                args=args,
                for_each=for_each,
                after=[*self.first, *(after or [])],
                when=when,
                repeat=repeat(step_id) if repeat is not None else None,
            )
        )
        return step_id

    def wait_first(self, seconds: float) -> None:
        """Everything appended from now on runs after a durable wait of `seconds`."""
        self.first = [self.add(WAIT.name, {"seconds": seconds})]

    def build(self, rationale: str) -> Plan:
        return Plan(steps=self.steps, rationale=rationale)


def add_intent(builder: PlanBuilder, intent: str, entities: Entities, question: str) -> None:
    """Append the steps of one recognised intent."""
    if intent == "refund":
        # `satisfied` guarantees an explicit amount: never default to the order's total.
        amount = entities.amount_cents
        for order_id in entities.orders[:1]:  # one refund per request: money moves carefully
            order = builder.add(GET_ORDER.name, {"order_id": order_id})
            builder.add(SEARCH_KB.name, {"query": REFUND_POLICY_QUERY})
            builder.add(
                CREATE_REFUND.name,
                {"order_id": order_id, "amount_cents": amount, "reason": question[:200]},
                after=[order],  # never move money before the order has been looked up
            )
    elif intent == "order_status":
        for order_id in entities.orders:
            order = builder.add(
                GET_ORDER.name, {"order_id": order_id}, repeat=_watch(entities.watch_for)
            )
            # Only a shipped order has a parcel to track: otherwise the answer is the order.
            builder.add(
                TRACK_SHIPMENT.name,
                {"tracking_number": f"${order}.tracking_number"},
                when=Condition(ref=f"${order}.tracking_number", is_="present"),
            )
        for tracking in entities.tracking:
            builder.add(TRACK_SHIPMENT.name, {"tracking_number": tracking})
    elif intent == "order_stock":
        for order_id in entities.orders:
            order = builder.add(GET_ORDER.name, {"order_id": order_id})
            builder.add(CHECK_INVENTORY.name, {"sku": "$item.sku"}, for_each=f"${order}.items")
        for sku in entities.skus:
            builder.add(CHECK_INVENTORY.name, {"sku": sku})
    elif intent == "customer_orders":
        for email in entities.emails:
            customer = builder.add(FIND_CUSTOMER.name, {"email": email})
            builder.add(LIST_ORDERS.name, {"customer_id": f"${customer}.customer_id"})
    elif intent == "policy":
        builder.add(SEARCH_KB.name, {"query": question[:500]})


def _watch(statuses: list[str]) -> Callable[[str], Repeat] | None:
    """'Tell me when order N ships': look again until its status is one of `statuses`."""
    if not statuses:
        return None
    return lambda step_id: Repeat(
        until=Condition(ref=f"${step_id}.status", in_=list(statuses)),
        every_s=WATCH_EVERY_S,
        timeout_s=WATCH_FOR_S,
    )


def new_builder(entities: Entities) -> PlanBuilder:
    """A builder for `entities`' plan: one that starts with a wait when one was asked for."""
    builder = PlanBuilder()
    if entities.delay_s is not None:
        builder.wait_first(entities.delay_s)
    return builder


def exploratory_plan(entities: Entities, question: str) -> Plan:
    """What the planner does when the router is unsure: look up every entity, and the KB."""
    builder = new_builder(entities)
    for email in entities.emails:
        customer = builder.add(FIND_CUSTOMER.name, {"email": email})
        builder.add(LIST_ORDERS.name, {"customer_id": f"${customer}.customer_id"})
    for order_id in entities.orders:
        builder.add(GET_ORDER.name, {"order_id": order_id})
    for sku in entities.skus:
        builder.add(CHECK_INVENTORY.name, {"sku": sku})
    for tracking in entities.tracking:
        builder.add(TRACK_SHIPMENT.name, {"tracking_number": tracking})
    builder.add(SEARCH_KB.name, {"query": question[:500]})
    return builder.build("unsure of the intent: gather every entity mentioned and search the KB")
