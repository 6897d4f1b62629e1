"""One order with its items: `get_order`."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from pydantic import BaseModel, Field

from agentkeel.schemas.tools.downstreams import ORDERS_DB
from agentkeel.schemas.tools.spec import ActorScoped, ToolArgs, ToolSpec, money


class GetOrderArgs(ToolArgs):
    order_id: int = Field(ge=1)


class GetOrderInput(GetOrderArgs, ActorScoped):
    """What the activity receives."""


class OrderItem(BaseModel):
    sku: str
    product_name: str
    quantity: int
    unit_price_cents: int


class Order(BaseModel):
    order_id: int
    customer_id: int
    status: str
    total_cents: int
    refunded_cents: int
    placed_at: str
    items: list[OrderItem]
    tracking_number: str | None = None


def _order(out: dict[str, Any]) -> str:
    items = ", ".join(f"{i['quantity']} x {i['product_name']} ({i['sku']})" for i in out["items"])
    refunded = f", {money(out['refunded_cents'])} refunded" if out["refunded_cents"] else ""
    return (
        f"Order {out['order_id']} is {out['status']}: {items}; "
        f"total {money(out['total_cents'])}{refunded}."
    )


GET_ORDER = ToolSpec(
    name="get_order",
    downstream=ORDERS_DB,
    description="Get an order with its items, totals and tracking number.",
    args_model=GetOrderArgs,
    input_model=GetOrderInput,
    result_model=Order,
    cache_ttl=timedelta(seconds=30),
    speculate_arg="order_id",
    render=_order,
)
