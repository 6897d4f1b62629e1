"""Building the semantic tier of the path cache (imports torch and faiss: only when enabled)."""

from __future__ import annotations

import asyncio
from functools import cache

import asyncpg

from agentkeel.activities.cache.semantic.embedder import SentenceTransformerEmbedder
from agentkeel.activities.cache.semantic.index import SemanticIndex
from agentkeel.activities.cache.semantic.lookup import SemanticCache


@cache
def shared_embedder(model_dir: str | None = None) -> SentenceTransformerEmbedder:
    """One embedder per process and model: it loads once (seconds), then serves every worker.
    `model_dir`: a sentence-transformers directory; None: the packaged all-MiniLM-L6-v2."""
    return SentenceTransformerEmbedder(model_dir)


async def build_semantic_cache(
    pool: asyncpg.Pool, *, threshold: float, model_dir: str | None = None
) -> SemanticCache:
    embedder = await asyncio.to_thread(shared_embedder, model_dir)
    await asyncio.to_thread(
        embedder.embed, ["warm-up"]
    )  # the first request pays no first-call costs
    index = SemanticIndex(pool, dim=embedder.dim)
    await index.load()  # rebuilt from Postgres: the entries are durable, the index is not
    return SemanticCache(embedder, index, threshold=threshold)
