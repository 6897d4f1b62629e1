"""Schema migrations: agentkeel's SQL files (`activities/database/migrations/`), then the served
domain's (`Domain.migrations`), each applied once, in name order.

A core file's version is its name without `.sql` (`0002_agent_runs`); a domain's is that
name behind the domain's prefix (`helpdesk/0001_tickets`). Each file runs in its own
transaction together with its row in `schema_migrations`, so a failed file leaves nothing
behind and is retried whole next time. Workers and tests may start together: every
transaction first takes a transaction-scoped advisory lock, so concurrent callers apply
each file exactly once and the lock can never outlive its transaction on a pooled connection.
"""

from __future__ import annotations

from importlib import resources

import asyncpg

from agentkeel.sdk.domain import Domain

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


def migration_files(domain: Domain | None = None) -> list[tuple[str, str]]:
    """Return `(version, sql)` of agentkeel's migrations, then `domain`'s, each in filename
    order."""
    found = _sql_files("agentkeel.activities.database", "migrations", prefix="")
    if domain is not None and domain.migrations is not None:
        own = domain.migrations
        prefix = f"{domain.name}/" if own.prefix is None else own.prefix
        found += _sql_files(own.package, own.folder, prefix=prefix)
    return found


def _sql_files(package: str, folder: str, *, prefix: str) -> list[tuple[str, str]]:
    where = resources.files(package) / folder
    files = sorted(
        (entry for entry in where.iterdir() if entry.name.endswith(".sql")),
        key=lambda entry: entry.name,
    )
    return [
        (prefix + entry.name.removesuffix(".sql"), entry.read_text(encoding="utf-8"))
        for entry in files
    ]


async def apply_migrations(conn: asyncpg.Connection, domain: Domain | None = None) -> list[str]:
    """Apply the migrations (agentkeel's, then `domain`'s) not yet in `schema_migrations`.

    Args:
        conn: A connection outside any transaction.
        domain: The served domain; None: agentkeel's own tables only.

    Returns:
        The versions applied by this call, in order; empty when the schema was current.
    """
    async with conn.transaction():
        await conn.execute("SELECT pg_advisory_xact_lock($1)", _LOCK_KEY)
        await conn.execute(_CREATE_TABLE)
    applied: list[str] = []
    for version, sql in migration_files(domain):
        async with conn.transaction():
            await conn.execute("SELECT pg_advisory_xact_lock($1)", _LOCK_KEY)
            # Checked under the lock: a concurrent caller may have applied it meanwhile.
            if await conn.fetchval(_IS_APPLIED, version):
                continue
            await conn.execute(sql)
            await conn.execute("INSERT INTO schema_migrations (version) VALUES ($1)", version)
        applied.append(version)
    return applied
