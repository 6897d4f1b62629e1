"""Migrations and seed data, against real Postgres: applied once in file-name order even when
run at once, a deterministic seed of the expected volume."""

from __future__ import annotations

import asyncio
import time

import asyncpg

from agentkeel.activities.database.migrate import apply_migrations, migration_files
from agentkeel.cli.stack.demo import DEMO_TENANT
from agentkeel.examples.shop import domain as shop
from agentkeel.examples.shop.seed import seed_demo_data
from tests.support.pg import fresh_database
from tests.support.tool_fixtures import seeded_dsn as seeded_dsn

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


async def _checksums(conn: asyncpg.Connection) -> dict[str, str]:
    return {
        table: await conn.fetchval(
            f"SELECT md5(string_agg(t::text, '|' ORDER BY t::text)) FROM {table} t"
        )
        for table in SEEDED_TABLES
    }


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
