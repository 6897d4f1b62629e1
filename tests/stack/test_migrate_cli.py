"""`agentkeel migrate` as a release's Job runs it: the schema of agentkeel and of the served
domain in an empty database, no demo data, and nothing to do the second time."""

from __future__ import annotations

import json

import asyncpg

from tests.support.cli import _agentkeel as agentkeel_cli
from tests.support.pg import fresh_database


async def test_migrate_applies_the_schema_and_seeds_nothing(admin_dsn: str) -> None:
    async with fresh_database(admin_dsn, migrate=False) as dsn:
        env = {"AGENTKEEL_DATABASE_URL": dsn}
        code, out, err = await agentkeel_cli("migrate", "-o", "json", env=env)
        assert code == 0, err
        first = json.loads(out)
        assert first["domain"] == "shop" and "0002_agent_runs" in first["applied"]
        conn = await asyncpg.connect(dsn)
        try:
            applied = await conn.fetch("SELECT version FROM schema_migrations")
            assert {r["version"] for r in applied} == set(first["applied"])
            assert await conn.fetchval("SELECT count(*) FROM orders") == 0, "no demo data"
        finally:
            await conn.close()
        code, out, _ = await agentkeel_cli("migrate", "--json", env=env)
        assert (code, json.loads(out)["applied"]) == (0, [])
