"""Throwaway databases (tests, benchmarks) and DSN helpers, on any Postgres that allows it."""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any
from urllib.parse import urlsplit

import asyncpg

from agentkeel.activities.database.migrate import apply_migrations
from agentkeel.sdk.domain import Domain


def dsn_for(admin_dsn: str, database: str) -> str:
    """`admin_dsn` pointed at `database`; host, user and query (a socket `host=`) are kept."""
    return urlsplit(admin_dsn)._replace(path=f"/{database}").geturl()


async def create_database(admin_dsn: str, name: str, *, template: str | None = None) -> str:
    """Create `name` (a copy of `template` when given) and return its DSN."""
    clone = f' TEMPLATE "{template}"' if template else ""
    conn = await asyncpg.connect(admin_dsn)
    try:
        await conn.execute(f'CREATE DATABASE "{name}"{clone}')
    finally:
        await conn.close()
    return dsn_for(admin_dsn, name)


async def drop_database(admin_dsn: str, name: str) -> None:
    """Drop `name`, ending its sessions first: a pool a test forgot must not keep it alive."""
    conn = await asyncpg.connect(admin_dsn)
    try:
        await conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    finally:
        await conn.close()


@asynccontextmanager
async def throwaway_database(
    admin_dsn: str,
    *,
    prefix: str = "agentkeel_tmp",
    migrate: bool = True,
    domain: Domain | None = None,
    seed: Callable[[asyncpg.Connection], Awaitable[Any]] | None = None,
    template: str | None = None,
) -> AsyncIterator[str]:
    """Create a database, yield its DSN, drop it afterwards.

    Args:
        admin_dsn: A DSN on the server, allowed to create databases.
        prefix: Start of the random database name (`<prefix>_<hex>`).
        migrate: Apply the migrations (agentkeel's and `domain`'s) before yielding.
        domain: Whose tables to create besides agentkeel's.
        seed: Fills the database after migrating (a domain's `seed`); None: no data.
        template: Clone this database instead (it must have no other sessions); `migrate`
            and `seed` are then ignored.
    """
    name = f"{prefix}_{secrets.token_hex(6)}"
    dsn = await create_database(admin_dsn, name, template=template)
    try:
        if migrate and template is None:
            conn = await asyncpg.connect(dsn)
            try:
                await apply_migrations(conn, domain)
                if seed is not None:
                    await seed(conn)
            finally:
                await conn.close()
        yield dsn
    finally:
        await drop_database(admin_dsn, name)
