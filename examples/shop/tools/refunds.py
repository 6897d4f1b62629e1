"""Refunds, the one side-effecting tool: `create_refund`."""

from __future__ import annotations

from typing import Any

import asyncpg
from pydantic import BaseModel, Field
from temporalio import activity
from temporalio.exceptions import ApplicationError

from agentkeel import (
    NOT_AUTHORIZED,
    NOT_FOUND,
    ActorScoped,
    FreeText,
    ToolArgs,
    ToolContext,
    money,
    not_found,
    tool,
)
from agentkeel.examples.shop import queries as q
from agentkeel.examples.shop.downstreams import ORDERS_DB
from agentkeel.examples.shop.resources import shop

REFUND_REJECTED = "RefundRejected"
"""A refund the order does not allow (more than is left, a cancelled order, a key reused
for another refund): non-retryable."""


class CreateRefundArgs(ToolArgs):
    order_id: int = Field(ge=1, le=2**31 - 1)
    amount_cents: int = Field(ge=1, le=10**9)
    reason: FreeText = Field(min_length=1, max_length=500)


class CreateRefundInput(CreateRefundArgs, ActorScoped):
    """What the activity receives: the arguments plus what the workflow adds (the same
    fields as the tool's own `input_model`; named here for stand-ins and tests)."""

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


async def _may_refund(args: CreateRefundArgs, ctx: ToolContext) -> None:
    """The order is of the caller's tenant, and a customer's own: checked before the run
    claims the refund or asks an approver (the refund checks it again, under its lock)."""
    owner = await shop(ctx).pool.fetchval(q.ORDER_OWNER, args.order_id, ctx.tenant)
    ctx.require_owner(owner, f"order {args.order_id}")
    if owner is None:
        raise not_found(f"order {args.order_id}")


@tool(
    description="Refund part or all of an order. Side-effecting: at most once per step.",
    downstream=ORDERS_DB,
    side_effect=True,
    max_concurrency=1,
    non_retryable_errors=(NOT_FOUND, NOT_AUTHORIZED, REFUND_REJECTED),
    amount_arg="amount_cents",
    amount_currency="USD",
    identity_args=("order_id",),
    # What a request asks with: "my order 4774 cost $26.97 ... refund $5 on 5903" asks
    # $5 on order 5903, and mentions the rest.
    asked_by=("refund", "money back", "reimburs"),
    authorize=_may_refund,
    render=_refund,
)
async def create_refund(args: CreateRefundArgs, ctx: ToolContext) -> Refund:
    """Refund part or all of an order, at most once per idempotency key.

    The key's lookup, the checks and the insert share one transaction, under a lock on the
    order, and the key is unique: an attempt retried after an earlier attempt's commit (say
    its result was lost) finds that refund and returns it with `created=False`.
    """
    key = ctx.idempotency_key
    assert key is not None, "the workflow gives every side effect its key"
    async with shop(ctx).pool.acquire() as conn, conn.transaction():
        order = await conn.fetchrow(q.LOCK_ORDER, args.order_id, ctx.tenant)
        ctx.require_owner(order and order["customer_id"], f"order {args.order_id}")
        if order is None:
            raise not_found(f"order {args.order_id}")
        earlier = await conn.fetchrow(q.REFUND_BY_KEY, key)
        if earlier is not None:
            return _earlier_refund(earlier, args, key, order["customer_id"])
        if order["status"] == "cancelled":
            raise _rejected(f"order {args.order_id} is cancelled and was never charged")
        refundable = order["total_cents"] - await conn.fetchval(
            q.REFUNDED_CENTS, args.order_id, ctx.tenant
        )
        if args.amount_cents > refundable:
            raise _rejected(
                f"refund of {args.amount_cents} cents exceeds the {refundable} cents"
                f" still refundable on order {args.order_id}"
            )
        row = await conn.fetchrow(
            q.INSERT_REFUND, args.order_id, args.amount_cents, args.reason, key, ctx.tenant
        )
        if row is None:
            # The key was taken meanwhile by a refund of another order (which holds another
            # lock); this statement sees it now that its transaction committed.
            earlier = await conn.fetchrow(q.REFUND_BY_KEY, key)
            return _earlier_refund(earlier, args, key, order["customer_id"])
    activity.logger.info("refund %s issued for order %s", row["refund_id"], args.order_id)
    return _made(row, order["customer_id"], created=True)


def _earlier_refund(
    row: asyncpg.Record, args: CreateRefundArgs, key: str, customer_id: int
) -> Refund:
    if row["order_id"] != args.order_id or row["amount_cents"] != args.amount_cents:
        # Names nothing of that refund: it may belong to someone else.
        raise _rejected(f"idempotency key {key!r} was already used for a different refund")
    return _made(row, customer_id, created=False)


def _made(row: asyncpg.Record, customer_id: int, *, created: bool) -> Refund:
    return Refund(
        refund_id=row["refund_id"],
        order_id=row["order_id"],
        customer_id=customer_id,
        amount_cents=row["amount_cents"],
        status=row["status"],
        created=created,
    )


def _rejected(message: str) -> ApplicationError:
    return ApplicationError(message, type=REFUND_REJECTED, non_retryable=True)
