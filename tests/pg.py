"""Fresh Postgres databases for tests: created, migrated and seeded on entry, dropped on exit.

The server is the one named by `AGENTKEEL_TEST_ADMIN_DSN` (default: the local Postgres as
user postgres); the DSN must allow CREATE DATABASE. Each database gets a random name,
`agentkeel_test_<hex>`, so tests running at once never share one.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from urllib.parse import urlsplit

import asyncpg

from activities.migrate import apply_migrations
from activities.seed import seed_demo_data

ADMIN_DSN_ENV = "AGENTKEEL_TEST_ADMIN_DSN"
DEFAULT_ADMIN_DSN = "postgresql://postgres@127.0.0.1:5432/postgres"
SEED_ORDERS = 1500
"""Orders seeded by default: the fixed facts hold and seeding stays quick."""


def admin_dsn() -> str:
    """The DSN of a database on the test server, with the right to create databases."""
    return os.environ.get(ADMIN_DSN_ENV) or DEFAULT_ADMIN_DSN


@asynccontextmanager
async def fresh_database(
    *, migrate: bool = True, seed_orders: int | None = SEED_ORDERS
) -> AsyncIterator[str]:
    """Create a database, yield its DSN, drop it afterwards.

    Args:
        migrate: Apply the migrations before yielding.
        seed_orders: Seed the demo data with this many orders (after migrating); None: no data.
    """
    admin = admin_dsn()
    name = f"agentkeel_test_{secrets.token_hex(6)}"
    conn = await asyncpg.connect(admin)
    try:
        await conn.execute(f'CREATE DATABASE "{name}"')
    finally:
        await conn.close()
    dsn = urlsplit(admin)._replace(path=f"/{name}").geturl()
    try:
        if migrate:
            conn = await asyncpg.connect(dsn)
            try:
                await apply_migrations(conn)
                if seed_orders is not None:
                    await seed_demo_data(conn, orders=seed_orders)
            finally:
                await conn.close()
        yield dsn
    finally:
        await _drop_database(admin, name)


async def _drop_database(admin: str, name: str) -> None:
    conn = await asyncpg.connect(admin)
    try:
        # A pool the test forgot to close must not keep the database alive.
        await conn.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
            " WHERE datname = $1 AND pid <> pg_backend_pid()",
            name,
        )
        await conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    finally:
        await conn.close()
