"""Schema migrations: SQL files in `activities/database/migrations/`, applied once each, in order.

A file's version is its name without `.sql` (`0001_domain`). Each file runs in its own
transaction together with its row in `schema_migrations`, so a failed file leaves nothing
behind and is retried whole next time. Workers and tests may start together: every
transaction first takes a transaction-scoped advisory lock, so concurrent callers apply
each file exactly once and the lock can never outlive its transaction on a pooled connection.
"""

from __future__ import annotations

from importlib import resources

import asyncpg

__all__ = ["apply_migrations", "migration_files"]

# Any constant shared by every agentkeel process; "agentkee" as an int64.
_LOCK_KEY = 0x6167656E746B6565

_CREATE_TABLE = """
CREATE TABLE IF NOT EXISTS schema_migrations (
    version    text PRIMARY KEY,
    applied_at timestamptz NOT NULL DEFAULT now()
)
"""

_IS_APPLIED = "SELECT EXISTS (SELECT 1 FROM schema_migrations WHERE version = $1)"


def migration_files() -> list[tuple[str, str]]:
    """Return `(version, sql)` of every packaged migration, in filename order."""
    folder = resources.files("agentkeel.activities.database") / "migrations"
    files = sorted(
        (entry for entry in folder.iterdir() if entry.name.endswith(".sql")),
        key=lambda entry: entry.name,
    )
    return [(entry.name.removesuffix(".sql"), entry.read_text(encoding="utf-8")) for entry in files]


async def apply_migrations(conn: asyncpg.Connection) -> list[str]:
    """Apply the migrations not yet recorded in `schema_migrations`.

    Args:
        conn: A connection outside any transaction.

    Returns:
        The versions applied by this call, in order; empty when the schema was current.
    """
    async with conn.transaction():
        await conn.execute("SELECT pg_advisory_xact_lock($1)", _LOCK_KEY)
        await conn.execute(_CREATE_TABLE)
    applied: list[str] = []
    for version, sql in migration_files():
        async with conn.transaction():
            await conn.execute("SELECT pg_advisory_xact_lock($1)", _LOCK_KEY)
            # Checked under the lock: a concurrent caller may have applied it meanwhile.
            if await conn.fetchval(_IS_APPLIED, version):
                continue
            await conn.execute(sql)
            await conn.execute("INSERT INTO schema_migrations (version) VALUES ($1)", version)
        applied.append(version)
    return applied
