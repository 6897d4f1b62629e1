"""One order with its items: `get_order`."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from pydantic import BaseModel, Field

from agentkeel import ActorScoped, ToolArgs, ToolContext, money, not_found, tool
from agentkeel.examples.shop import queries as q
from agentkeel.examples.shop.downstreams import ORDERS_DB
from agentkeel.examples.shop.resources import shop


class GetOrderArgs(ToolArgs):
    order_id: int = Field(ge=1, le=2**31 - 1)


class GetOrderInput(GetOrderArgs, ActorScoped):
    """What the activity receives: the arguments plus what the workflow adds (the same
    fields as the tool's own `input_model`; named here for stand-ins and tests)."""


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


@tool(
    downstream=ORDERS_DB,
    cache_ttl=timedelta(seconds=30),
    speculate_arg="order_id",
    # What the orders table says of the order it was asked for: a refund may take its
    # order and amount from these (not from names, addresses or notes).
    trusted_fields=(
        "order_id",
        "customer_id",
        "status",
        "total_cents",
        "refunded_cents",
        "items.*.sku",
        "tracking_number",
    ),
    render=_order,
)
async def get_order(args: GetOrderArgs, ctx: ToolContext) -> Order:
    """Get an order with its items, totals and tracking number."""
    async with shop(ctx).pool.acquire() as conn:
        row = await conn.fetchrow(q.GET_ORDER, args.order_id, ctx.tenant)
        ctx.require_owner(row and row["customer_id"], f"order {args.order_id}")
        if row is None:
            raise not_found(f"order {args.order_id}")
        items = await conn.fetch(q.ORDER_ITEMS, args.order_id, ctx.tenant)
    return Order(
        order_id=row["order_id"],
        customer_id=row["customer_id"],
        status=row["status"],
        total_cents=row["total_cents"],
        refunded_cents=row["refunded_cents"],
        placed_at=row["placed_at"].isoformat(),
        items=[OrderItem.model_validate(dict(item)) for item in items],
        tracking_number=row["tracking_number"],
    )
