"""Postgres for tests: which server to use, and fresh databases on it.

The server, chosen once per session by `session_server()`:

1. `AGENTKEEL_TEST_ADMIN_DSN` when set; it must answer, or the session ends.
2. Else the local Postgres as user postgres (`DEFAULT_ADMIN_DSN`), when it answers within
   `PROBE_TIMEOUT_S`.
3. Else an embedded Postgres 16 (pgserver) in a temporary directory, stopped and removed at
   the end of the session. `AGENTKEEL_TEST_EMBEDDED=1` goes straight here (for Redis too).

The DSN must allow CREATE DATABASE. Each database gets a random name, so tests running at
once never share one.
"""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
import tempfile
import warnings
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import asyncpg
import pytest

from agentkeel.cli.stack.databases import throwaway_database
from agentkeel.cli.stack.machine_postgres import MachinePostgres, socket_dir_for
from agentkeel.cli.stack.services import pgserver_available
from agentkeel.examples.shop import domain as shop
from agentkeel.examples.shop.seed import seed_demo_data
from agentkeel.settings.connections import redact

ADMIN_DSN_ENV = "AGENTKEEL_TEST_ADMIN_DSN"
EMBEDDED_ENV = "AGENTKEEL_TEST_EMBEDDED"
DEFAULT_ADMIN_DSN = "postgresql://postgres@127.0.0.1:5432/postgres"
PROBE_TIMEOUT_S = 1.0
"""How long the default server gets to answer before the embedded one is started."""
CONNECT_TIMEOUT_S = 10.0
"""How long a server named in the environment gets to answer."""
SEED_ORDERS = 1500
"""Orders seeded by default: the fixed facts hold and seeding stays quick."""


@dataclass(frozen=True)
class Service:
    """A server the session uses, and why that one."""

    url: str
    origin: str

    def describe(self) -> str:
        shown = redact(self.url) if urlsplit(self.url).password else self.url
        return f"{shown} ({self.origin})"


def embedded_forced() -> bool:
    """True when `AGENTKEEL_TEST_EMBEDDED` asks for embedded servers whatever else answers."""
    return os.environ.get(EMBEDDED_ENV, "").strip().lower() not in ("", "0", "false", "no")


@asynccontextmanager
async def session_server() -> AsyncIterator[Service]:
    """The Postgres server of this session (see the module docstring), with its admin DSN."""
    explicit = os.environ.get(ADMIN_DSN_ENV)
    if embedded_forced():
        reason = f"${EMBEDDED_ENV} is set"
    elif explicit:
        error = await _probe(explicit, CONNECT_TIMEOUT_S)
        if error is not None:
            pytest.exit(f"${ADMIN_DSN_ENV} ({redact(explicit)}) does not answer: {error}", 2)
        yield Service(explicit, f"${ADMIN_DSN_ENV}")
        return
    else:
        error = await _probe(DEFAULT_ADMIN_DSN, PROBE_TIMEOUT_S)
        if error is None:
            yield Service(DEFAULT_ADMIN_DSN, "local default")
            return
        reason = f"{DEFAULT_ADMIN_DSN} does not answer: {error}"
    async with _embedded_server() as dsn:
        yield Service(dsn, f"embedded pgserver; {reason}")


async def _probe(dsn: str, timeout_s: float) -> str | None:
    """None when `dsn` accepts a connection within `timeout_s`, else why not."""
    try:
        conn = await asyncpg.connect(dsn, timeout=timeout_s)
    except Exception as exc:
        return f"{type(exc).__name__}: {exc}"
    await conn.close()
    return None


@asynccontextmanager
async def _embedded_server() -> AsyncIterator[str]:
    workdir = Path(tempfile.mkdtemp(prefix="agentkeel-pg-"))
    if not pgserver_available():
        # No wheel for this Python: the machine's binaries (`MachinePostgres`).
        os.chmod(workdir, 0o755)  # run as `postgres` when the tests run as root
        machine = MachinePostgres.in_dir(workdir / "pgdata", socket_dir_for(workdir / "pgdata"))
        try:
            await asyncio.to_thread(machine.start)
            try:
                yield machine.dsn
            finally:
                await asyncio.to_thread(machine.stop)
        finally:
            shutil.rmtree(workdir, ignore_errors=True)
        return
    logging.getLogger("pgserver").setLevel(logging.WARNING)  # it narrates every step at INFO
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # platformdirs warns about XDG_RUNTIME_DIR at import
        import pgserver
    try:
        server: Any = await asyncio.to_thread(pgserver.get_server, workdir / "pgdata", "stop")
        try:
            dsn: str = server.get_uri()
            yield dsn
        finally:
            await asyncio.to_thread(server.cleanup)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


@asynccontextmanager
async def fresh_database(
    admin_dsn: str,
    *,
    migrate: bool = True,
    seed_orders: int | None = SEED_ORDERS,
    template: str | None = None,
) -> AsyncIterator[str]:
    """A database of this test's own (see `cli.stack.databases.throwaway_database`)."""
    async with throwaway_database(
        admin_dsn,
        prefix="agentkeel_test",
        migrate=migrate,
        domain=shop,
        seed=None if seed_orders is None else partial(seed_demo_data, orders=seed_orders),
        template=template,
    ) as dsn:
        yield dsn


SHOP_TENANT_TABLES = ("customers", "orders", "order_items", "shipments", "refunds")
"""The shop's tables whose rows belong to one tenant (`examples/shop/migrations/0002_tenants`)."""


async def hand_shop_to(database_url: str, tenant: str) -> None:
    """Make every customer's row of this test's database `tenant`'s: the seed writes them
    for `default`, and a stack asks as a tenant of its own (so its Redis keys are its own).
    A test's later stack takes the rows over from its earlier one."""
    conn = await asyncpg.connect(database_url)
    try:
        async with conn.transaction():
            for table in SHOP_TENANT_TABLES:
                await conn.execute(f"UPDATE {table} SET tenant = $1 WHERE tenant <> $1", tenant)
    finally:
        await conn.close()
