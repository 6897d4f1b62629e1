"""Building the semantic tier of the path cache (imports torch and faiss: only when enabled)."""

from __future__ import annotations

import asyncio
from functools import cache
from typing import Literal

import asyncpg

from agentkeel.activities.cache.semantic.embedder import Embedder, SentenceTransformerEmbedder
from agentkeel.activities.cache.semantic.index import SemanticIndex
from agentkeel.activities.cache.semantic.lookup import SemanticCache
from agentkeel.activities.cache.semantic.pgvector_index import PgVectorIndex


@cache
def shared_embedder(
    model_dir: str | None = None, backend: Literal["torch", "onnx"] = "torch"
) -> Embedder:
    """One embedder per process and model: it loads once (seconds), then serves every worker.
    `model_dir`: a sentence-transformers directory; None: the packaged all-MiniLM-L6-v2.
    `backend`: `onnx` runs the directory's ONNX export (`semantic.onnx_embedder`)."""
    if backend == "onnx":
        from agentkeel.activities.cache.semantic.onnx_embedder import OnnxEmbedder

        if model_dir is None:
            raise ValueError("the ONNX backend needs a model directory with an export")
        return OnnxEmbedder(model_dir)
    return SentenceTransformerEmbedder(model_dir)


async def build_semantic_cache(
    pool: asyncpg.Pool,
    *,
    threshold: float,
    store: Literal["faiss", "pgvector"] = "faiss",
    model_dir: str | None = None,
    backend: Literal["torch", "onnx"] = "torch",
) -> SemanticCache:
    """`store`: `faiss`, an index in this process synced from Postgres, or `pgvector`, one
    index in Postgres that every worker shares (raises `PgVectorUnavailable` without it).
    `model_dir`: the embedder's sentence-transformers directory (None: the packaged one);
    `backend`: how it runs (`torch`, or `onnx` on its export)."""
    embedder = await asyncio.to_thread(shared_embedder, model_dir, backend)
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
