"""Refunds on the seeded shop: finding a refundable order, reading what was refunded, waiting
for a run's approval, and a planner for requests read as refunds."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import asyncpg
from temporalio.client import WorkflowHandle

from agentkeel.schemas import names
from agentkeel.schemas.actor import Actor
from agentkeel.schemas.approvals import ApprovalRequest
from agentkeel.schemas.model_calls import RouteInput, RouteResult
from agentkeel.schemas.progress import RunProgress
from agentkeel.schemas.result import AgentResult, StepOutcome
from agentkeel.schemas.route import Route, Tier
from tests.support.fakes import FakeScriptedPolicy


def step_of(result: AgentResult, tool: str) -> StepOutcome:
    return next(s for s in result.steps if s.tool == tool)


async def refundable_order(
    db: asyncpg.Pool, *, at_least_cents: int, other_than: int | None = None
) -> tuple[int, int]:
    """An order (id, customer) with at least this much still refundable (not `other_than`)."""
    row = await db.fetchrow(
        """
        SELECT o.order_id, o.customer_id FROM orders o
        WHERE o.status <> 'cancelled' AND o.order_id <> coalesce($2::bigint, -1)
          AND o.total_cents - (SELECT coalesce(sum(amount_cents), 0) FROM refunds r
                               WHERE r.order_id = o.order_id) >= $1
        ORDER BY o.order_id LIMIT 1
        """,
        at_least_cents,
        other_than,
    )
    assert row is not None
    return row["order_id"], row["customer_id"]


async def another_customer(db: asyncpg.Pool, than: int) -> int:
    other = await db.fetchval(
        "SELECT customer_id FROM customers WHERE customer_id <> $1 ORDER BY customer_id LIMIT 1",
        than,
    )
    assert other is not None
    return int(other)


async def refunds_of(db: asyncpg.Pool, order_id: int) -> list[asyncpg.Record]:
    return await db.fetch(
        "SELECT amount_cents, idempotency_key FROM refunds WHERE order_id = $1 "
        "AND idempotency_key IS NOT NULL ORDER BY refund_id",
        order_id,
    )


async def until_awaiting(
    handle: WorkflowHandle[Any, AgentResult], timeout_s: float = 30.0
) -> ApprovalRequest:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        progress = await handle.query(names.PROGRESS_QUERY, result_type=RunProgress)
        if progress.awaiting is not None:
            return progress.awaiting
        await asyncio.sleep(0.2)
    raise AssertionError("the run never waited for an approval")


def staff(name: str = "ann") -> Actor:
    return Actor(role="staff", name=name)


class RefundScript(FakeScriptedPolicy):
    """A planner for requests the router read as refunds: the scripted plans, in order."""

    async def route(self, request: RouteInput) -> RouteResult:
        route = Route(intent="refund", confidence=0.3, tier=Tier.RULES, reason="asks a refund")
        return RouteResult(route=route, confident=False)


def refunds_plan(order_id: int, *amounts: object) -> dict[str, object]:
    steps = [
        {
            "id": f"r{i}",
            "tool": "create_refund",
            "args": {"order_id": order_id, "amount_cents": amount, "reason": "split"},
        }
        for i, amount in enumerate(amounts)
    ]
    return {"steps": steps}
