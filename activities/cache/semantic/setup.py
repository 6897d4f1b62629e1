"""Building the semantic tier of the path cache (imports torch and faiss: only when enabled)."""

from __future__ import annotations

import asyncio
from functools import cache
from typing import Literal

import asyncpg

from agentkeel.activities.cache.semantic.embedder import SentenceTransformerEmbedder
from agentkeel.activities.cache.semantic.index import SemanticIndex
from agentkeel.activities.cache.semantic.lookup import SemanticCache
from agentkeel.activities.cache.semantic.pgvector_index import PgVectorIndex


@cache
def shared_embedder(model_dir: str | None = None) -> SentenceTransformerEmbedder:
    """One embedder per process and model: it loads once (seconds), then serves every worker.
    `model_dir`: a sentence-transformers directory; None: the packaged all-MiniLM-L6-v2."""
    return SentenceTransformerEmbedder(model_dir)


async def build_semantic_cache(
    pool: asyncpg.Pool,
    *,
    threshold: float,
    store: Literal["faiss", "pgvector"] = "faiss",
    model_dir: str | None = None,
) -> SemanticCache:
    """`store`: `faiss`, an index in this process synced from Postgres, or `pgvector`, one
    index in Postgres that every worker shares (raises `PgVectorUnavailable` without it).
    `model_dir`: the embedder's sentence-transformers directory (None: the packaged one)."""
    embedder = await asyncio.to_thread(shared_embedder, model_dir)
    await asyncio.to_thread(
        embedder.embed, ["warm-up"]
    )  # the first request pays no first-call costs
    index: SemanticIndex | PgVectorIndex = (
        PgVectorIndex(pool, dim=embedder.dim, embedder=embedder.identity)
        if store == "pgvector"
        else SemanticIndex(pool, dim=embedder.dim, embedder=embedder.identity)
    )
    await index.load()  # FAISS: rebuilt from Postgres; pgvector: the schema made if missing
    return SemanticCache(embedder, index, threshold=threshold)
