"""`agentkeel migrate`: the database schema of a deployment, agentkeel's tables and the served
domain's, and nothing else: no demo data (the local stack's `up` and `demo` seed the example
shop for themselves). Idempotent and safe to run from several places at once (each
migration is applied under an advisory lock): the Kubernetes base runs it as a Job before
the workers of a release roll."""

from __future__ import annotations

import argparse
import json

import asyncpg

from agentkeel.activities.database.migrate import apply_migrations
from agentkeel.settings.domain_assembly import check_domain
from agentkeel.settings.model import ENV_PREFIX, Settings, SettingsError, StartupError

__all__ = ["add_migrate_parser", "run_migrate"]


def add_migrate_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    migrate = sub.add_parser(
        "migrate", help="apply the database schema (agentkeel's and the domain's), no data"
    )
    migrate.add_argument("--json", action="store_true", help="print the versions as JSON")


async def run_migrate(settings: Settings, args: argparse.Namespace) -> int:
    """0 and the versions applied (none when the schema was current)."""
    if not settings.database_url:
        raise SettingsError(f"agentkeel migrate needs {ENV_PREFIX}DATABASE_URL")
    domain = check_domain(settings)
    try:
        conn = await asyncpg.connect(settings.database_url)
    except (OSError, asyncpg.PostgresError) as exc:
        raise StartupError(f"cannot reach the database: {exc}") from None
    try:
        applied = await apply_migrations(conn, domain)
    finally:
        await conn.close()
    if args.json:
        print(json.dumps({"domain": domain.name, "applied": applied}))
    elif applied:
        print(f"applied {len(applied)} migration(s): {', '.join(applied)}")
    else:
        print("the schema is current: nothing to apply")
    return 0
