"""Customers and their orders: `find_customer`, `list_orders`."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from pydantic import BaseModel, Field

from agentkeel import ActorScoped, FreeText, ToolArgs, ToolContext, money, not_found, tool
from agentkeel.examples.shop import queries as q
from agentkeel.examples.shop.downstreams import ORDERS_DB
from agentkeel.examples.shop.resources import shop


class FindCustomerArgs(ToolArgs):
    email: FreeText = Field(min_length=3, max_length=254)


class FindCustomerInput(FindCustomerArgs, ActorScoped):
    """What the activity receives: the arguments plus what the workflow adds (the same
    fields as the tool's own `input_model`; named here for stand-ins and tests)."""


class Customer(BaseModel):
    customer_id: int
    name: str
    email: str
    tier: str
    city: str


class ListOrdersArgs(ToolArgs):
    customer_id: int = Field(ge=1, le=2**31 - 1)
    limit: int = Field(default=5, ge=1, le=50)


class ListOrdersInput(ListOrdersArgs, ActorScoped):
    """What the activity receives: the arguments plus what the workflow adds (the same
    fields as the tool's own `input_model`; named here for stand-ins and tests)."""


class OrderSummary(BaseModel):
    order_id: int
    status: str
    total_cents: int
    placed_at: str


class OrderList(BaseModel):
    customer_id: int
    orders: list[OrderSummary]
    order_ids: list[int]


def _customer(out: dict[str, Any]) -> str:
    return (
        f"Customer {out['name']} ({out['email']}, {out['tier']} tier, {out['city']}), "
        f"id {out['customer_id']}."
    )


def _orders(out: dict[str, Any]) -> str:
    if not out["orders"]:
        return f"Customer {out['customer_id']} has no orders."
    listed = "; ".join(
        f"#{o['order_id']} {o['status']} {money(o['total_cents'])} ({o['placed_at'][:10]})"
        for o in out["orders"]
    )
    return f"Recent orders of customer {out['customer_id']}: {listed}."


@tool(
    downstream=ORDERS_DB,
    cache_ttl=timedelta(minutes=5),
    speculate_arg="email",
    trusted_fields=("customer_id", "email"),
    render=_customer,
)
async def find_customer(args: FindCustomerArgs, ctx: ToolContext) -> Customer:
    """Find a customer by email address."""
    row = await shop(ctx).pool.fetchrow(q.FIND_CUSTOMER, args.email.strip().lower(), ctx.tenant)
    ctx.require_owner(row and row["customer_id"], f"the customer {args.email!r}")
    if row is None:
        raise not_found(f"customer with email {args.email!r}")
    return Customer.model_validate(dict(row))


@tool(
    downstream=ORDERS_DB,
    cache_ttl=timedelta(seconds=30),
    trusted_fields=(
        "customer_id",
        "orders.*.order_id",
        "orders.*.total_cents",
        "orders.*.status",
        "order_ids.*",
    ),
    render=_orders,
)
async def list_orders(args: ListOrdersArgs, ctx: ToolContext) -> OrderList:
    """List a customer's most recent orders."""
    ctx.require_owner(args.customer_id, f"the orders of customer {args.customer_id}")
    rows = await shop(ctx).pool.fetch(q.LIST_ORDERS, args.customer_id, args.limit, ctx.tenant)
    if not rows:
        raise not_found(f"customer {args.customer_id}")
    orders = [
        OrderSummary(
            order_id=row["order_id"],
            status=row["status"],
            total_cents=row["total_cents"],
            placed_at=row["placed_at"].isoformat(),
        )
        for row in rows
        if row["order_id"] is not None
    ]
    return OrderList(
        customer_id=args.customer_id, orders=orders, order_ids=[o.order_id for o in orders]
    )
