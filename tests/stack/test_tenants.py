"""The tenant is a data boundary: one tenant's actors never reach another tenant's rows.

The stack's own tenant holds the seeded shop (`tests.support.pg.hand_shop_to`); a second
tenant, named after it so its Redis keys go at teardown, holds nothing or a few rows moved to
it. Asked as the second tenant, an order of the first is not there: not read, not refunded,
not served from a cache or a shared read.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import asyncpg
import httpx
import pytest
import redis.asyncio as aioredis

from agentkeel.activities.cache.tool_results import KEY_PREFIX as TOOL_KEY_PREFIX
from agentkeel.examples.shop.carrier import serving
from agentkeel.schemas import errors
from agentkeel.schemas.actor import Actor
from agentkeel.schemas.plan.model import Plan
from agentkeel.schemas.result import AgentResult, StepOutcome, StepStatus
from tests.support.agent_stack import AgentStack, StackFactory

STAFF = Actor(role="staff", name="ann")


@pytest.fixture
async def slow_carrier() -> AsyncIterator[str]:
    """A carrier of this test's own, slow enough that calls arriving together merge."""
    async with serving(300) as url:
        yield url


def other_tenant(stack: AgentStack) -> str:
    return f"{stack.tenant}-b"


def step_of(result: AgentResult, tool: str) -> StepOutcome:
    return next(s for s in result.steps if s.tool == tool)


async def an_order(db: asyncpg.Pool) -> tuple[int, int, int]:
    """An order (id, customer, total) that is not cancelled."""
    row = await db.fetchrow(
        "SELECT order_id, customer_id, total_cents FROM orders "
        "WHERE status <> 'cancelled' ORDER BY order_id LIMIT 1"
    )
    assert row is not None
    return row["order_id"], row["customer_id"], row["total_cents"]


def read_and_refund(order_id: int, cents: int) -> Plan:
    return Plan.model_validate(
        {
            "steps": [
                {"id": "s1", "tool": "get_order", "args": {"order_id": order_id}},
                {
                    "id": "s2",
                    "tool": "create_refund",
                    "args": {"order_id": order_id, "amount_cents": cents, "reason": "damaged"},
                },
            ]
        }
    )


async def test_another_tenants_staff_can_neither_read_nor_refund_an_order(
    stack: AgentStack, orders_db: asyncpg.Pool
) -> None:
    order_id, _, _ = await an_order(orders_db)
    question = f"Please refund $15.00 for order {order_id}, it arrived damaged"
    theirs = await stack.ask(
        question,
        tenant=other_tenant(stack),
        actor=STAFF,
        plan=read_and_refund(order_id, 1500),
        options={"max_replans": 0, "use_cache": False},
    )
    for tool in ("get_order", "create_refund"):
        step = step_of(theirs, tool)
        assert step.status is StepStatus.FAILED and step.error is not None
        assert step.error.type == errors.NOT_FOUND, step.error  # never another tenant's row
        assert step.output is None
    refunds = await orders_db.fetchval("SELECT count(*) FROM refunds WHERE order_id = $1", order_id)
    assert refunds == 0
    # The order's own tenant reads and refunds it, and the refund is written as its own.
    mine = await stack.ask(
        question,
        actor=STAFF,
        plan=read_and_refund(order_id, 1500),
        options={"max_replans": 0, "use_cache": False},
    )
    assert step_of(mine, "get_order").status is StepStatus.SUCCEEDED
    assert step_of(mine, "create_refund").status is StepStatus.SUCCEEDED
    tenants = await orders_db.fetch("SELECT tenant FROM refunds WHERE order_id = $1", order_id)
    assert [r["tenant"] for r in tenants] == [stack.tenant]


async def test_a_cached_read_of_one_tenant_is_never_served_to_another(
    stack: AgentStack, orders_db: asyncpg.Pool, redis_url: str
) -> None:
    order_id, _, total = await an_order(orders_db)
    question = f"Where is order {order_id}?"
    mine = await stack.ask(question, actor=STAFF)
    read = step_of(mine, "get_order")
    assert read.status is StepStatus.SUCCEEDED and read.output["total_cents"] == total
    redis = aioredis.from_url(redis_url)
    try:
        pattern = f"{TOOL_KEY_PREFIX}:*:get_order:{stack.tenant}:*"
        assert [k async for k in redis.scan_iter(match=pattern)], "the read was not cached"
    finally:
        await redis.aclose()
    # The same question, the same audience (staff), a moment later: another tenant.
    theirs = await stack.ask(question, tenant=other_tenant(stack), actor=STAFF)
    assert theirs.cache.value == "miss"
    refused = step_of(theirs, "get_order")
    assert refused.status is StepStatus.FAILED and refused.error is not None
    assert refused.error.type == errors.NOT_FOUND
    assert refused.output is None


async def test_a_merged_tracking_request_gives_each_tenant_its_own_parcels(
    make_stack: StackFactory, orders_db: asyncpg.Pool, slow_carrier: str
) -> None:
    """Customer 1 of each tenant asks at once: each is answered from its own rows."""
    stack = await make_stack(carrier_url=slow_carrier, merge_window_ms=200)
    other = other_tenant(stack)
    # Tenant B gets a customer 1 of its own: customer 2's rows, moved over and renamed.
    mine_number = await orders_db.fetchval(
        "SELECT s.tracking_number FROM shipments s JOIN orders o USING (order_id) "
        "WHERE o.customer_id = 1 ORDER BY o.order_id LIMIT 1"
    )
    theirs_number = await orders_db.fetchval(
        "SELECT s.tracking_number FROM shipments s JOIN orders o USING (order_id) "
        "WHERE o.customer_id = 2 ORDER BY o.order_id LIMIT 1"
    )
    assert mine_number and theirs_number
    async with orders_db.acquire() as conn, conn.transaction():
        for table in ("orders", "order_items", "shipments", "refunds"):
            await conn.execute(
                f"UPDATE {table} SET tenant = $1 WHERE order_id IN "
                "(SELECT order_id FROM orders WHERE customer_id = 2)",
                other,
            )
        await conn.execute("UPDATE customers SET tenant = $1 WHERE customer_id = 2", other)
        # Tenant B's customer 2 acts as "customer 1" of tenant B: same subject, other tenant.
        await conn.execute("UPDATE orders SET customer_id = 1 WHERE tenant = $1", other)
    one = Actor(role="customer", subject="1")
    asked = [
        (stack.tenant, mine_number),  # A's customer 1, its own parcel
        (other, theirs_number),  # B's customer 1, its own parcel
        (other, mine_number),  # B's customer 1, A's parcel: not there for B
    ]
    handles = await asyncio.gather(
        *(
            stack.start(f"where is parcel {number}?", tenant=tenant, actor=one)
            for tenant, number in asked
        )
    )
    results = await asyncio.wait_for(asyncio.gather(*(h.result() for h in handles)), 60)
    a_own, b_own, b_foreign = (step_of(r, "track_shipment") for r in results)
    assert a_own.status is StepStatus.SUCCEEDED and a_own.output["tracking_number"] == mine_number
    assert b_own.status is StepStatus.SUCCEEDED
    assert b_own.output["tracking_number"] == theirs_number
    assert b_foreign.status is StepStatus.FAILED and b_foreign.error is not None
    assert b_foreign.error.type == errors.NOT_AUTHORIZED and b_foreign.output is None
    async with httpx.AsyncClient() as http:
        stats = (await http.get(f"{slow_carrier}/stats")).json()
    assert stats["requests"] <= 2  # merged: one request per tenant at most


async def test_another_tenants_staff_cannot_track_a_parcel_by_a_guessed_number(
    stack: AgentStack, orders_db: asyncpg.Pool
) -> None:
    """A tracking number is the order id padded: staff of another tenant can guess it, and
    find nothing there; the carrier is never asked."""
    number = await orders_db.fetchval("SELECT tracking_number FROM shipments LIMIT 1")
    plan = Plan.model_validate(
        {"steps": [{"id": "s1", "tool": "track_shipment", "args": {"tracking_number": number}}]}
    )
    options = {"max_replans": 0, "use_cache": False}
    question = f"where is parcel {number}?"
    theirs = await stack.ask(
        question, tenant=other_tenant(stack), actor=STAFF, plan=plan, options=options
    )
    step = step_of(theirs, "track_shipment")
    assert step.status is StepStatus.FAILED and step.error is not None
    assert step.error.type == errors.NOT_FOUND and step.output is None
    mine = await stack.ask(question, actor=STAFF, plan=plan, options=options)
    assert step_of(mine, "track_shipment").output["tracking_number"] == number
