"""The tool activities, migrations, seed data and carrier service, against real Postgres and HTTP.

Read-only tests share one seeded database; every test that writes gets a fresh one.
"""

from __future__ import annotations

import asyncio
import socket
import sys
import time
import typing
from collections.abc import AsyncIterator

import asyncpg
import httpx
import pytest
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment

from agentkeel.activities.database.migrate import apply_migrations, migration_files
from agentkeel.cli.stack.demo import DEMO_TENANT
from agentkeel.examples.shop import domain as shop
from agentkeel.examples.shop.carrier import serve
from agentkeel.examples.shop.seed import carrier_for, seed_demo_data
from agentkeel.examples.shop.tools import (
    CheckInventoryInput,
    CreateRefundInput,
    FindCustomerInput,
    GetOrderInput,
    ListOrdersInput,
    SearchKbInput,
    TrackShipmentInput,
)
from agentkeel.schemas.tools import ACTIVITY_TOOLS, TOOLS
from tests.support.pg import fresh_database
from tests.support.shop_tools import ShopActivities

VERSIONS = [version for version, _sql in migration_files(shop)]
SEEDED_TABLES = (
    "customers",
    "products",
    "warehouses",
    "inventory",
    "orders",
    "order_items",
    "shipments",
    "refunds",
    "kb_articles",
)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def _checksums(conn: asyncpg.Connection) -> dict[str, str]:
    return {
        table: await conn.fetchval(
            f"SELECT md5(string_agg(t::text, '|' ORDER BY t::text)) FROM {table} t"
        )
        for table in SEEDED_TABLES
    }


@pytest.fixture(scope="module")
async def seeded_dsn(admin_dsn: str) -> AsyncIterator[str]:
    async with fresh_database(admin_dsn) as dsn:
        yield dsn


@pytest.fixture(scope="module")
async def carrier_url() -> AsyncIterator[str]:
    """The real carrier service, on a free port, through `serve`."""
    port = _free_port()
    server = asyncio.create_task(serve("127.0.0.1", port, latency_ms=5))
    url = f"http://127.0.0.1:{port}"
    try:
        async with httpx.AsyncClient() as client:
            for _ in range(100):
                try:
                    if (await client.get(f"{url}/healthz")).status_code == 200:
                        break
                except httpx.TransportError:
                    pass  # not listening yet
                await asyncio.sleep(0.02)
            else:
                raise RuntimeError("carrier service did not start")
        yield url
    finally:
        server.cancel()
        with pytest.raises(asyncio.CancelledError):
            await server


@pytest.fixture(scope="module")
async def http() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(timeout=5) as client:
        yield client


@pytest.fixture(scope="module")
async def pool(seeded_dsn: str) -> AsyncIterator[asyncpg.Pool]:
    async with asyncpg.create_pool(seeded_dsn, min_size=1, max_size=4) as p:
        yield p


@pytest.fixture(scope="module")
def acts(pool: asyncpg.Pool, http: httpx.AsyncClient, carrier_url: str) -> ShopActivities:
    return ShopActivities(pool, http, carrier_url)


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


def run(fn: typing.Any, arg: typing.Any) -> typing.Any:
    return ActivityEnvironment().run(fn, arg)


# --- migrations and seed ---------------------------------------------------------------------
async def test_migrations_are_recorded_and_applied_once(admin_dsn: str) -> None:
    async with fresh_database(admin_dsn, migrate=False) as dsn:
        conn = await asyncpg.connect(dsn)
        try:
            # agentkeel's own files first, in file-name order, then the domain's.
            assert VERSIONS[0] == "0002_agent_runs"
            assert VERSIONS[-2:] == ["0001_domain", "0002_tenants"]
            assert VERSIONS[:-2] == sorted(VERSIONS[:-2]), "applied in file-name order"
            assert await apply_migrations(conn, shop) == VERSIONS
            recorded = await conn.fetch("SELECT version FROM schema_migrations")
            assert sorted(r["version"] for r in recorded) == sorted(VERSIONS)
            assert await apply_migrations(conn, shop) == []
            assert await conn.fetchval("SELECT to_regclass('agent_runs')::text") == "agent_runs"
        finally:
            await conn.close()


async def test_concurrent_migrations_apply_each_file_once(admin_dsn: str) -> None:
    async with fresh_database(admin_dsn, migrate=False) as dsn:
        conns = [await asyncpg.connect(dsn) for _ in range(3)]
        try:
            results = await asyncio.gather(*(apply_migrations(c, shop) for c in conns))
            assert sorted(v for applied in results for v in applied) == sorted(VERSIONS)
            recorded = await conns[0].fetchval("SELECT count(*) FROM schema_migrations")
            assert recorded == len(VERSIONS)
        finally:
            for conn in conns:
                await conn.close()


async def test_seed_is_deterministic(admin_dsn: str, seeded_dsn: str) -> None:
    async with fresh_database(admin_dsn, seed_orders=None) as dsn:
        first, second = await asyncpg.connect(seeded_dsn), await asyncpg.connect(dsn)
        try:
            assert await seed_demo_data(second, orders=1500) is True
            assert await _checksums(second) == await _checksums(first)
            assert await seed_demo_data(second, orders=1500) is False
        finally:
            await first.close()
            await second.close()


async def test_seed_default_volume_is_fast_and_consistent(admin_dsn: str) -> None:
    async with fresh_database(admin_dsn, seed_orders=None) as dsn:
        conn = await asyncpg.connect(dsn)
        try:
            started = time.perf_counter()
            assert await seed_demo_data(conn) is True
            assert time.perf_counter() - started < 5
            orders = await conn.fetchrow(
                "SELECT count(*), min(order_id), max(order_id) FROM orders"
            )
            assert tuple(orders) == (5000, 1001, 6000)
            # Stock is known for every SKU in every warehouse.
            assert await conn.fetchval(
                "SELECT (SELECT count(*) FROM products) * (SELECT count(*) FROM warehouses)"
                " = (SELECT count(*) FROM inventory)"
            )
            assert await conn.fetchval("SELECT count(*) FROM kb_articles") >= 20
            # `agentkeel demo` asks as the tenant that owns the seed: any other would find
            # no order at all.
            assert [
                r["tenant"] for r in await conn.fetch("SELECT DISTINCT tenant FROM orders")
            ] == [DEMO_TENANT]
            # Every total is the sum of its items; every item count is 1..5.
            assert not await conn.fetch(
                "SELECT o.order_id FROM orders o JOIN order_items i USING (order_id)"
                " GROUP BY o.order_id, o.total_cents"
                " HAVING o.total_cents <> sum(i.quantity * i.unit_price_cents) OR count(*) > 5"
            )
            # Exactly the shipped and delivered orders have shipments, numbered by order id.
            assert not await conn.fetch(
                "SELECT o.order_id FROM orders o LEFT JOIN shipments s USING (order_id)"
                " WHERE (o.status IN ('shipped', 'delivered')) <> (s.order_id IS NOT NULL)"
                " OR s.tracking_number <> 'TRK' || lpad(o.order_id::text, 10, '0')"
            )
            # New rows get ids past the seeded ones.
            new_id = await conn.fetchval(
                "INSERT INTO refunds (order_id, amount_cents, reason, idempotency_key)"
                " VALUES (1003, 1, 'test', 'test:1') RETURNING refund_id"
            )
            assert new_id == await conn.fetchval("SELECT count(*) FROM refunds")
        finally:
            await conn.close()


# --- read tools ------------------------------------------------------------------------------
def test_activities_match_the_catalog(acts: ShopActivities) -> None:
    names = []
    for method in acts.all_activities():
        name = method.__temporal_activity_definition.name  # type: ignore[attr-defined]
        hints = typing.get_type_hints(method)
        assert hints["return"] is TOOLS[name].result_model
        assert [h for k, h in hints.items() if k != "return"] == [TOOLS[name].activity_input_model]
        names.append(name)
    assert sorted(names) == sorted(ACTIVITY_TOOLS)


async def test_find_customer(acts: ShopActivities) -> None:
    alice = await run(acts.find_customer, FindCustomerInput(email=" Alice@Example.com "))
    assert alice.model_dump() == {
        "customer_id": 1,
        "name": "Alice Martin",
        "email": "alice@example.com",
        "tier": "gold",
        "city": "Amsterdam",
    }
    bob = await run(acts.find_customer, FindCustomerInput(email="bob@example.com"))
    assert (bob.customer_id, bob.name) == (2, "Bob Chen")


async def test_list_orders_newest_first(acts: ShopActivities) -> None:
    alice = await run(acts.list_orders, ListOrdersInput(customer_id=1))
    assert alice.order_ids == [1002, 1001, 1003]
    assert [o.status for o in alice.orders] == ["processing", "shipped", "delivered"]
    bob = await run(acts.list_orders, ListOrdersInput(customer_id=2, limit=2))
    assert len(bob.orders) == len(bob.order_ids) >= 1
    assert [o.placed_at for o in bob.orders] == sorted(
        (o.placed_at for o in bob.orders), reverse=True
    )
    assert (await run(acts.list_orders, ListOrdersInput(customer_id=1, limit=1))).order_ids == [
        1002
    ]


async def test_get_order_shipped(acts: ShopActivities) -> None:
    order = await run(acts.get_order, GetOrderInput(order_id=1001))
    assert (order.customer_id, order.status, order.refunded_cents) == (1, "shipped", 0)
    assert len({item.sku for item in order.items}) == len(order.items) == 3
    assert order.total_cents == sum(i.quantity * i.unit_price_cents for i in order.items) > 0
    assert all(item.product_name for item in order.items)
    assert order.tracking_number == "TRK0000001001"
    assert order.placed_at.endswith("+00:00")


async def test_get_order_processing_with_an_out_of_stock_item(acts: ShopActivities) -> None:
    order = await run(acts.get_order, GetOrderInput(order_id=1002))
    assert (order.status, order.tracking_number, len(order.items)) == ("processing", None, 2)
    stock = [await run(acts.check_inventory, CheckInventoryInput(sku=i.sku)) for i in order.items]
    assert sorted(s.in_stock for s in stock) == [False, True]
    out = next(s for s in stock if not s.in_stock)
    assert [w.available for w in out.warehouses] == [0, 0, 0]


async def test_get_order_delivered(acts: ShopActivities) -> None:
    order = await run(acts.get_order, GetOrderInput(order_id=1003))
    assert (order.status, order.tracking_number) == ("delivered", "TRK0000001003")


async def test_check_inventory(acts: ShopActivities) -> None:
    stock = await run(acts.check_inventory, CheckInventoryInput(sku="sku-00001"))
    assert stock.sku == "SKU-00001"
    assert [w.warehouse for w in stock.warehouses] == ["AMS", "CHI", "SIN"]
    assert stock.total_available == sum(w.available for w in stock.warehouses) > 0
    assert stock.in_stock and stock.product_name


async def test_search_kb(acts: ShopActivities) -> None:
    result = await run(acts.search_kb, SearchKbInput(query="how do refunds work"))
    assert result.query == "how do refunds work"
    assert result.hits[0].title == "Refund policy"
    assert "30 days" in result.hits[0].snippet
    assert [h.rank for h in result.hits] == sorted((h.rank for h in result.hits), reverse=True)
    # No article holds every word: the any-word fallback still answers.
    loose = await run(
        acts.search_kb, SearchKbInput(query="my headphones broke, money back?", limit=5)
    )
    assert loose.hits and len(loose.hits) <= 5
    nothing = await run(acts.search_kb, SearchKbInput(query="zyxwvut qqqq"))
    assert nothing.hits == []


async def test_track_shipment(acts: ShopActivities, pool: asyncpg.Pool) -> None:
    tracking = await run(acts.track_shipment, TrackShipmentInput(tracking_number="TRK0000001001"))
    assert tracking.tracking_number == "TRK0000001001"
    assert tracking.carrier == carrier_for("TRK0000001001")
    assert tracking.carrier == await pool.fetchval(
        "SELECT carrier FROM shipments WHERE tracking_number = 'TRK0000001001'"
    )
    assert tracking.events and tracking.status in ("in_transit", "out_for_delivery", "delivered")
    again = await run(acts.track_shipment, TrackShipmentInput(tracking_number="TRK0000001001"))
    assert again == tracking


@pytest.mark.parametrize(
    ("tool", "arg", "message"),
    [
        ("find_customer", FindCustomerInput(email="nobody@example.com"), "nobody@example.com"),
        ("list_orders", ListOrdersInput(customer_id=99999), "customer 99999 not found"),
        ("get_order", GetOrderInput(order_id=9999999), "order 9999999 not found"),
        ("check_inventory", CheckInventoryInput(sku="SKU-99999"), "SKU-99999"),
        ("track_shipment", TrackShipmentInput(tracking_number="TRK123"), "TRK123"),
        (
            "create_refund",
            CreateRefundInput(order_id=9999999, amount_cents=1, reason="x", idempotency_key="k"),
            "order 9999999 not found",
        ),
    ],
)
async def test_missing_entities_are_non_retryable_not_found(
    acts: ShopActivities, tool: str, arg: typing.Any, message: str
) -> None:
    with pytest.raises(ApplicationError) as caught:
        await run(getattr(acts, tool), arg)
    assert (caught.value.type, caught.value.non_retryable) == ("NotFound", True)
    assert message in str(caught.value)


async def test_track_shipment_with_the_carrier_down_is_retryable(pool: asyncpg.Pool) -> None:
    async with httpx.AsyncClient(timeout=2) as client:
        acts = ShopActivities(pool, client, f"http://127.0.0.1:{_free_port()}")
        with pytest.raises(httpx.ConnectError):
            await run(acts.track_shipment, TrackShipmentInput(tracking_number="TRK0000001001"))


async def test_carrier_cli_reports_a_port_in_use() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        proc = await asyncio.create_subprocess_exec(
            *(sys.executable, "-m", "agentkeel.examples.shop.carrier", "--port", str(port)),
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        stdout, stderr = await asyncio.wait_for(proc.communicate(), timeout=30)
    assert proc.returncode == 1
    assert stdout == b""
    assert (
        stderr.decode().strip()
        == f"carrier: cannot listen on 127.0.0.1:{port}: the port is already in use"
    )


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
