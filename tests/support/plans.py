"""Plans, stand-in tools and readings of results that tests of several files share."""

from __future__ import annotations

import asyncio
from typing import Any

from temporalio import activity

from agentkeel.examples.shop.tools import (
    CheckInventoryInput,
    Inventory,
    ListOrdersInput,
    OrderList,
    WarehouseStock,
)
from agentkeel.schemas.result import StepError, StepOutcome, StepStatus


class SlowInventory:
    """Stand-in for `check_inventory` that holds each call and counts calls in flight."""

    def __init__(self, hold_s: float) -> None:
        self.hold_s = hold_s
        self.in_flight = 0
        self.max_in_flight = 0
        self.calls: list[str] = []

    @activity.defn(name="check_inventory")
    async def check_inventory(self, args: CheckInventoryInput) -> Inventory:
        self.calls.append(args.sku)
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            await asyncio.sleep(self.hold_s)
        finally:
            self.in_flight -= 1
        stock = [WarehouseStock(warehouse="AMS", available=3)]
        return Inventory(
            sku=args.sku,
            product_name="stand-in",
            total_available=3,
            in_stock=True,
            warehouses=stock,
        )


def wide_plan(width: int) -> dict[str, object]:
    return {
        "steps": [
            {"id": f"s{i}", "tool": "check_inventory", "args": {"sku": f"SKU-{i:05d}"}}
            for i in range(1, width + 1)
        ]
    }


KB_QUESTION = "What is your return policy for damaged items?"


def step_output(result: object, tool: str) -> dict[str, object]:
    steps = [s for s in result.steps if s.tool == tool]  # type: ignore[attr-defined]
    assert steps, f"no {tool} step"
    output: dict[str, object] = steps[0].output
    return output


INVALID_PLANS: dict[str, dict[str, object]] = {
    "UnknownTool": {"steps": [{"id": "s1", "tool": "delete_everything", "args": {}}]},
    "InvalidArguments": {
        "steps": [{"id": "s1", "tool": "get_order", "args": {"order_id": "not-a-number"}}]
    },
    "MissingReference": {
        "steps": [
            {"id": "s1", "tool": "get_order", "args": {"order_id": 1001}},
            {
                "id": "s2",
                "tool": "track_shipment",
                "args": {"tracking_number": "$s1.no_such_field"},
            },
        ]
    },
    "EmptyPlan": {"steps": []},
    "DuplicateStep": {
        "steps": [
            {"id": "s1", "tool": "search_kb", "args": {"query": "a"}},
            {"id": "s1", "tool": "search_kb", "args": {"query": "b"}},
        ]
    },
    "DependencyCycle": {
        "steps": [
            {"id": "a", "tool": "get_order", "args": {"order_id": "$b.order_id"}},
            {"id": "b", "tool": "get_order", "args": {"order_id": "$a.order_id"}},
        ]
    },
}


def watch(step_id: str, order_id: int, statuses: list[str], **repeat: Any) -> dict[str, Any]:
    return {
        "id": step_id,
        "tool": "get_order",
        "args": {"order_id": order_id},
        "repeat": {"until": {"ref": f"${step_id}.status", "in": statuses}, **repeat},
    }


def every_order_plan() -> dict[str, Any]:
    """A customer's orders, each read in full: a fan-out as wide as the list."""
    return {
        "steps": [
            {"id": "s1", "tool": "list_orders", "args": {"customer_id": 1}},
            {
                "id": "s2",
                "tool": "get_order",
                "for_each": "$s1.order_ids",
                "args": {"order_id": "$item"},
            },
        ]
    }


def list_orders_of(order_ids: list[int]) -> Any:
    @activity.defn(name="list_orders")
    async def list_every_order(args: ListOrdersInput) -> OrderList:
        """A stand-in customer with these orders (the seed's have a few each)."""
        return OrderList(customer_id=args.customer_id, orders=[], order_ids=order_ids)

    return list_every_order


GOOD_PLAN = {
    "rationale": "look up the order, then track it",
    "steps": [
        {"id": "s1", "tool": "get_order", "args": {"order_id": 1002}},
        {"id": "s2", "tool": "track_shipment", "args": {"tracking_number": "$s1.tracking_number"}},
    ],
}

BAD_REFERENCE_PLAN = {
    "rationale": "track a step that does not exist",
    "steps": [{"id": "s1", "tool": "track_shipment", "args": {"tracking_number": "$s9.x"}}],
}


ORDER_AND_TRACKING: dict[str, Any] = {
    "steps": [
        {"id": "s1", "tool": "get_order", "args": {"order_id": 1001}},
        {"id": "s2", "tool": "track_shipment", "args": {"tracking_number": "$s1.tracking_number"}},
    ],
    "answer": "Order {$s1.order_id} ({$s1.total_cents|money}) is {$s1.status}; "
    "its parcel is {$s2.status}.",
}


FAILED_LOOKUP = StepOutcome(
    id="s1",
    tool="get_order",
    args={"order_id": 1020},
    status=StepStatus.FAILED,
    error=StepError(type="NotFound", message="order 1020 not found"),
)
"""A round's first lookup that failed (a mistyped order id): what a replan corrects."""
