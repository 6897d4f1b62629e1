"""Customers and their orders: `find_customer`, `list_orders`."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from pydantic import BaseModel, Field

from agentkeel.schemas.tools.downstreams import ORDERS_DB
from agentkeel.schemas.tools.spec import ActorScoped, ToolArgs, ToolSpec, money


class FindCustomerArgs(ToolArgs):
    email: str = Field(min_length=3, max_length=254)


class FindCustomerInput(FindCustomerArgs, ActorScoped):
    """What the activity receives."""


class Customer(BaseModel):
    customer_id: int
    name: str
    email: str
    tier: str
    city: str


class ListOrdersArgs(ToolArgs):
    customer_id: int = Field(ge=1)
    limit: int = Field(default=5, ge=1, le=50)


class ListOrdersInput(ListOrdersArgs, ActorScoped):
    """What the activity receives."""


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


FIND_CUSTOMER = ToolSpec(
    name="find_customer",
    downstream=ORDERS_DB,
    description="Find a customer by email address.",
    args_model=FindCustomerArgs,
    input_model=FindCustomerInput,
    result_model=Customer,
    cache_ttl=timedelta(minutes=5),
    speculate_arg="email",
    render=_customer,
)
LIST_ORDERS = ToolSpec(
    name="list_orders",
    downstream=ORDERS_DB,
    description="List a customer's most recent orders.",
    args_model=ListOrdersArgs,
    input_model=ListOrdersInput,
    result_model=OrderList,
    cache_ttl=timedelta(seconds=30),
    render=_orders,
)
