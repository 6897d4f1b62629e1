"""`create_refund` against real Postgres, each test on a database of its own: retried or
concurrent calls with one key refund once, and what cannot be refunded is refused."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import asyncpg
import httpx
import pytest
from temporalio.exceptions import ApplicationError

from agentkeel.examples.shop.tools import CreateRefundInput, GetOrderInput
from tests.support.pg import fresh_database
from tests.support.shop_tools import ShopActivities
from tests.support.tool_fixtures import carrier_url as carrier_url
from tests.support.tool_fixtures import http as http
from tests.support.tool_fixtures import run


@pytest.fixture
async def fresh_pool(admin_dsn: str) -> AsyncIterator[asyncpg.Pool]:
    """A database of its own, for a test that writes."""
    async with (
        fresh_database(admin_dsn) as dsn,
        asyncpg.create_pool(dsn, min_size=2, max_size=4) as p,
    ):
        yield p


@pytest.fixture
def fresh_acts(
    fresh_pool: asyncpg.Pool, http: httpx.AsyncClient, carrier_url: str
) -> ShopActivities:
    return ShopActivities(fresh_pool, http, carrier_url)


# --- create_refund ---------------------------------------------------------------------------
def _refund(order_id: int, amount: int, key: str) -> CreateRefundInput:
    return CreateRefundInput(
        order_id=order_id, amount_cents=amount, reason="damaged", idempotency_key=key
    )


async def _refund_rows(pool: asyncpg.Pool, key: str) -> int:
    return int(await pool.fetchval("SELECT count(*) FROM refunds WHERE idempotency_key = $1", key))


async def test_retried_create_refund_refunds_once(
    fresh_acts: ShopActivities, fresh_pool: asyncpg.Pool
) -> None:
    # The second call is the retry of an attempt whose insert committed but whose result was lost.
    first = await run(fresh_acts.create_refund, _refund(1001, 500, "wf-1:step-3"))
    retry = await run(fresh_acts.create_refund, _refund(1001, 500, "wf-1:step-3"))
    assert (first.created, retry.created) == (True, False)
    assert retry.refund_id == first.refund_id
    assert (retry.order_id, retry.amount_cents, retry.status) == (1001, 500, "issued")
    assert await _refund_rows(fresh_pool, "wf-1:step-3") == 1
    order = await run(fresh_acts.get_order, GetOrderInput(order_id=1001))
    assert order.refunded_cents == 500


async def test_concurrent_create_refund_with_one_key_refunds_once(
    fresh_acts: ShopActivities, fresh_pool: asyncpg.Pool
) -> None:
    results = await asyncio.gather(
        *(run(fresh_acts.create_refund, _refund(1003, 700, "wf-2:step-1")) for _ in range(2))
    )
    assert sorted(r.created for r in results) == [False, True]
    assert results[0].refund_id == results[1].refund_id
    assert await _refund_rows(fresh_pool, "wf-2:step-1") == 1


async def test_over_refund_is_rejected(
    fresh_acts: ShopActivities, fresh_pool: asyncpg.Pool
) -> None:
    total = (await run(fresh_acts.get_order, GetOrderInput(order_id=1001))).total_cents
    with pytest.raises(ApplicationError) as caught:
        await run(fresh_acts.create_refund, _refund(1001, total + 1, "over"))
    assert (caught.value.type, caught.value.non_retryable) == ("RefundRejected", True)
    assert await _refund_rows(fresh_pool, "over") == 0
    # Refunds add up to the total, never past it.
    assert (await run(fresh_acts.create_refund, _refund(1001, total - 100, "part-1"))).created
    with pytest.raises(ApplicationError, match="exceeds the 100 cents"):
        await run(fresh_acts.create_refund, _refund(1001, 101, "part-2"))
    assert (await run(fresh_acts.create_refund, _refund(1001, 100, "part-3"))).created


async def test_refund_of_cancelled_order_or_reused_key_is_rejected(
    fresh_acts: ShopActivities, fresh_pool: asyncpg.Pool
) -> None:
    cancelled = await fresh_pool.fetchval(
        "SELECT min(order_id) FROM orders WHERE status = 'cancelled'"
    )
    with pytest.raises(ApplicationError, match="cancelled") as caught:
        await run(fresh_acts.create_refund, _refund(cancelled, 100, "cancelled"))
    assert (caught.value.type, caught.value.non_retryable) == ("RefundRejected", True)
    await run(fresh_acts.create_refund, _refund(1001, 100, "reused"))
    with pytest.raises(ApplicationError, match="already used for a different refund") as caught:
        await run(fresh_acts.create_refund, _refund(1003, 100, "reused"))
    assert caught.value.non_retryable
    assert await _refund_rows(fresh_pool, "reused") == 1


async def test_key_taken_by_a_concurrent_transaction_refunds_once(
    fresh_acts: ShopActivities, fresh_pool: asyncpg.Pool
) -> None:
    # Another transaction holds the key, uncommitted, for another order (so another lock):
    # the activity's lookup cannot see it, and only the unique key stops a second refund.
    async with fresh_pool.acquire() as other:
        tx = other.transaction()
        await tx.start()
        await other.execute(
            "INSERT INTO refunds (order_id, amount_cents, reason, idempotency_key)"
            " VALUES (1003, 300, 'other', 'shared')"
        )
        attempt = asyncio.ensure_future(run(fresh_acts.create_refund, _refund(1001, 300, "shared")))
        try:
            for _ in range(250):
                waiting = await fresh_pool.fetchval(
                    "SELECT count(*) FROM pg_stat_activity"
                    " WHERE datname = current_database() AND wait_event_type = 'Lock'"
                )
                if waiting or attempt.done():
                    break
                await asyncio.sleep(0.02)
            assert waiting == 1, "create_refund did not wait on the uncommitted key"
        finally:
            await tx.commit()
    with pytest.raises(ApplicationError, match="already used for a different refund") as caught:
        await attempt
    assert (caught.value.type, caught.value.non_retryable) == ("RefundRejected", True)
    assert await _refund_rows(fresh_pool, "shared") == 1
