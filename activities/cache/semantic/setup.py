"""Building the semantic tier of the path cache (imports torch and faiss: only when enabled)."""

from __future__ import annotations

import asyncio
from functools import cache
from typing import Literal

import asyncpg

from agentkeel.activities.cache.semantic.embedder import MiniLmEmbedder
from agentkeel.activities.cache.semantic.index import SemanticIndex
from agentkeel.activities.cache.semantic.lookup import SemanticCache
from agentkeel.activities.cache.semantic.pgvector_index import PgVectorIndex


@cache
def shared_embedder() -> MiniLmEmbedder:
    """One embedder per process: the model loads once (seconds), then serves every worker."""
    return MiniLmEmbedder()


async def build_semantic_cache(
    pool: asyncpg.Pool, *, threshold: float, store: Literal["faiss", "pgvector"] = "faiss"
) -> SemanticCache:
    """`store`: `faiss`, an index in this process synced from Postgres, or `pgvector`, one
    index in Postgres that every worker shares (raises `PgVectorUnavailable` without it)."""
    embedder = await asyncio.to_thread(shared_embedder)
    await asyncio.to_thread(
        embedder.embed, ["warm-up"]
    )  # the first request pays no first-call costs
    index: SemanticIndex | PgVectorIndex = (
        PgVectorIndex(pool, dim=embedder.dim)
        if store == "pgvector"
        else SemanticIndex(pool, dim=embedder.dim)
    )
    await index.load()  # FAISS: rebuilt from Postgres; pgvector: the schema made if missing
    return SemanticCache(embedder, index, threshold=threshold)
