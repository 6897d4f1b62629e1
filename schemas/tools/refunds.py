"""Refunds, the one side-effecting tool: `create_refund`."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from agentkeel.schemas.errors import NOT_AUTHORIZED, NOT_FOUND, REFUND_REJECTED
from agentkeel.schemas.tools.downstreams import ORDERS_DB
from agentkeel.schemas.tools.spec import ActorScoped, ToolArgs, ToolSpec, money


class CreateRefundArgs(ToolArgs):
    order_id: int = Field(ge=1)
    amount_cents: int = Field(ge=1)
    reason: str = Field(min_length=1, max_length=500)


class CreateRefundInput(CreateRefundArgs, ActorScoped):
    """What the activity receives: the plan's arguments plus the scheduler's idempotency key."""

    idempotency_key: str = Field(min_length=1, max_length=200)


class Refund(BaseModel):
    refund_id: int
    order_id: int
    customer_id: int | None = None
    amount_cents: int
    status: str
    created: bool
    """False when this idempotency key had already refunded: the earlier refund is returned."""


def _refund(out: dict[str, Any]) -> str:
    if out["created"]:
        return (
            f"Refund #{out['refund_id']} of {money(out['amount_cents'])} for order "
            f"{out['order_id']} has been issued."
        )
    return (
        f"This refund was already issued earlier (refund #{out['refund_id']}, "
        f"{money(out['amount_cents'])}); nothing was charged twice."
    )


CREATE_REFUND = ToolSpec(
    name="create_refund",
    downstream=ORDERS_DB,
    description="Refund part or all of an order. Side-effecting: at most once per step.",
    args_model=CreateRefundArgs,
    result_model=Refund,
    input_model=CreateRefundInput,
    idempotent=False,
    max_concurrency=1,
    non_retryable_errors=(NOT_FOUND, NOT_AUTHORIZED, REFUND_REJECTED),
    amount_arg="amount_cents",
    identity_args=("order_id",),
    render=_refund,
)
