"""Building the semantic tier of the path cache (imports torch and faiss: only when enabled)."""

from __future__ import annotations

import asyncio
from functools import cache

import asyncpg

from agentkeel.activities.cache.semantic.embedder import MiniLmEmbedder
from agentkeel.activities.cache.semantic.index import SemanticIndex
from agentkeel.activities.cache.semantic.lookup import SemanticCache


@cache
def shared_embedder() -> MiniLmEmbedder:
    """One embedder per process: the model loads once (seconds), then serves every worker."""
    return MiniLmEmbedder()


async def build_semantic_cache(pool: asyncpg.Pool, *, threshold: float) -> SemanticCache:
    embedder = await asyncio.to_thread(shared_embedder)
    await asyncio.to_thread(
        embedder.embed, ["warm-up"]
    )  # the first request pays no first-call costs
    index = SemanticIndex(pool, dim=embedder.dim)
    await index.load()  # rebuilt from Postgres: the entries are durable, the index is not
    return SemanticCache(embedder, index, threshold=threshold)
