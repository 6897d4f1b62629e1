"""Fakes for the benchmark: a scripted planner at the model boundary, and stand-in tools.

The stand-ins replace only the tools' I/O (Postgres, the carrier API) with a fixed
sleep, so every step costs exactly the stated latency and the benchmark measures
orchestration, not the database.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel
from temporalio import activity

from agentkeel.examples.shop.rules.policy import RulesPolicy
from agentkeel.examples.shop.tools import (
    CHECK_INVENTORY,
    FIND_CUSTOMER,
    GET_ORDER,
    LIST_ORDERS,
    SEARCH_KB,
    TRACK_SHIPMENT,
    CheckInventoryInput,
    Customer,
    FindCustomerInput,
    GetOrderInput,
    Inventory,
    KbHit,
    KbResult,
    ListOrdersInput,
    Order,
    OrderItem,
    OrderList,
    OrderSummary,
    SearchKbInput,
    Tracking,
    TrackShipmentInput,
    WarehouseStock,
)
from agentkeel.schemas.model_calls import PlanInput, PlanResult, RouteInput, RouteResult
from agentkeel.schemas.plan.model import Plan
from agentkeel.schemas.route import Route, Tier
from bench.dag_shapes import shape_named_in

_PLACED_AT = "2025-01-01T00:00:00Z"


class BenchPlanPolicy(RulesPolicy):
    """Routes every question as unsure and plans the shape named in it.

    Join and respond stay the real rules policy, so the run takes the same
    route → plan → execute → join → respond → store path as a real unsure request.
    `model_s` > 0 makes every route and plan call sleep that long first: a stand-in for
    a light model's decode time (the react loop's think turns are plan calls).
    """

    name = "fake-bench"

    def __init__(self, model_s: float = 0.0, *, write_answer: bool = False) -> None:
        """`write_answer`: each plan carries its answer (`Plan.answer`), as a planner that
        knows what it will say does, so the run needs no respond call."""
        super().__init__()
        self.model_s = model_s
        self.write_answer = write_answer

    async def _decode(self) -> None:
        if self.model_s > 0:
            await asyncio.sleep(self.model_s)

    async def route(self, request: RouteInput) -> RouteResult:
        await self._decode()
        route = Route(intent="bench", confidence=0.1, tier=Tier.RULES, reason="fake bench policy")
        return RouteResult(route=route, confident=False)

    async def plan(self, request: PlanInput) -> PlanResult:
        await self._decode()
        plan = shape_named_in(request.question).plan
        if self.write_answer:
            plan = plan.model_copy(update={"answer": answer_template(plan)})
        return PlanResult(plan=plan)


_QUOTED_FIELD = {
    SEARCH_KB.name: "query",
    GET_ORDER.name: "status",
    CHECK_INVENTORY.name: "total_available",
    TRACK_SHIPMENT.name: "status",
    FIND_CUSTOMER.name: "name",
    LIST_ORDERS.name: "customer_id",
}


def answer_template(plan: Plan) -> str:
    """An answer quoting one plain field of every step's output."""
    quoted = [f"{s.id}: {{${s.id}.{_QUOTED_FIELD[s.tool]}}}" for s in plan.steps]
    return "Done. " + "; ".join(quoted) + "."


def stand_in_result(tool: str, args: dict[str, Any]) -> BaseModel:
    """A valid result of `tool` for `args` (also used by the in-process modes)."""
    if tool == SEARCH_KB.name:
        hit = KbHit(article_id=1, title="Returns", snippet="Returns within 30 days.", rank=1.0)
        return KbResult(query=args["query"], hits=[hit])
    if tool == GET_ORDER.name:
        item = OrderItem(sku="SKU-00001", product_name="Widget", quantity=1, unit_price_cents=999)
        return Order(
            order_id=args["order_id"],
            customer_id=1,
            status="shipped",
            total_cents=999,
            refunded_cents=0,
            placed_at=_PLACED_AT,
            items=[item],
            tracking_number=f"TRK{args['order_id']:010d}",
        )
    if tool == CHECK_INVENTORY.name:
        stock = [WarehouseStock(warehouse="AMS", available=3)]
        return Inventory(
            sku=args["sku"],
            product_name="Widget",
            total_available=3,
            in_stock=True,
            warehouses=stock,
        )
    if tool == TRACK_SHIPMENT.name:
        number = args["tracking_number"]
        return Tracking(tracking_number=number, carrier="bench", status="in_transit")
    if tool == FIND_CUSTOMER.name:
        return Customer(customer_id=1, name="Bench", email=args["email"], tier="gold", city="AMS")
    if tool == LIST_ORDERS.name:
        summary = OrderSummary(
            order_id=1001, status="shipped", total_cents=999, placed_at=_PLACED_AT
        )
        return OrderList(customer_id=args["customer_id"], orders=[summary], order_ids=[1001])
    raise ValueError(f"no stand-in for tool {tool!r}")


class StandInTools:
    """Tool activities under their real names that sleep `latency_s` and return a valid result."""

    def __init__(self, latency_s: float) -> None:
        self.latency_s = latency_s
        self.calls = 0

    async def _call(self, tool: str, args: BaseModel) -> Any:
        self.calls += 1
        await asyncio.sleep(self.latency_s)
        return stand_in_result(tool, args.model_dump())

    @activity.defn(name=SEARCH_KB.name)
    async def search_kb(self, args: SearchKbInput) -> KbResult:
        return await self._call(SEARCH_KB.name, args)

    @activity.defn(name=GET_ORDER.name)
    async def get_order(self, args: GetOrderInput) -> Order:
        return await self._call(GET_ORDER.name, args)

    @activity.defn(name=CHECK_INVENTORY.name)
    async def check_inventory(self, args: CheckInventoryInput) -> Inventory:
        return await self._call(CHECK_INVENTORY.name, args)

    @activity.defn(name=TRACK_SHIPMENT.name)
    async def track_shipment(self, args: TrackShipmentInput) -> Tracking:
        return await self._call(TRACK_SHIPMENT.name, args)

    @activity.defn(name=FIND_CUSTOMER.name)
    async def find_customer(self, args: FindCustomerInput) -> Customer:
        return await self._call(FIND_CUSTOMER.name, args)

    @activity.defn(name=LIST_ORDERS.name)
    async def list_orders(self, args: ListOrdersInput) -> OrderList:
        return await self._call(LIST_ORDERS.name, args)

    def all(self) -> list[Callable[..., Any]]:
        """Every stand-in; `create_refund` keeps its real activity (no shape uses it)."""
        return [
            self.search_kb,
            self.get_order,
            self.check_inventory,
            self.track_shipment,
            self.find_customer,
            self.list_orders,
        ]
