"""Measured latencies: what each tool and each model tier took in recent runs.

Workers record every successful tool call and every plan and respond step (`observe`, in
the background: a record never delays the call it measures) as a bounded list of recent
samples in Redis, per deployment (the task queue, without its `-inference` suffix). A run
with a deadline reads them once (`latency_estimates`, a local activity recorded in its
history, so a replay plans with the same figures). Redis is an accelerator here as
everywhere: unreachable, every figure is a default (the catalog's `expected_ms`, the
model defaults below) and the run goes on.
"""

from __future__ import annotations

import asyncio
import functools
import statistics
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeVar

import redis.asyncio as aioredis
import structlog
from temporalio import activity

from agentkeel.activities.recent_lists import RecentLists
from agentkeel.activities.redis_errors import REDIS_ERRORS
from agentkeel.schemas import names
from agentkeel.schemas.deadline import LatencyEstimate, LatencyEstimates, LatencyEstimatesInput
from agentkeel.schemas.queues import INFERENCE_QUEUE_SUFFIX
from agentkeel.schemas.tools import TOOLS

log = structlog.get_logger(__name__)

KEY_PREFIX = "agentkeel:latency:v1"
SAMPLES_KEPT = 64
"""Recent samples per tool or tier: enough for a p90, few enough to follow a change."""
SAMPLES_TTL_S = 7 * 24 * 3600
"""A scope's samples outlive a week without a run only as long as that."""
READ_TIMEOUT_S = 0.3
"""A run with a deadline waits this long for its estimates before planning on defaults."""
MODEL_DEFAULTS_MS: Mapping[str, float] = {
    "plan:heavy": 800.0,
    "plan:light": 150.0,
    "plan:rules": 2.0,
    "respond:heavy": 400.0,
    "respond:light": 150.0,
    "respond:rules": 2.0,
}
"""Before anything was measured: a heavy model planning on an accelerator, a light one."""

M = TypeVar("M")


def scope_of(task_queue: str) -> str:
    """The deployment a queue belongs to: `agentkeel` for `agentkeel` and its inference pool."""
    return task_queue.removesuffix(INFERENCE_QUEUE_SUFFIX)


class LatencyBook:
    """Recent latencies in Redis, per deployment scope and per `tool:<name>` or `<step>:<tier>`."""

    def __init__(self, redis: aioredis.Redis | None) -> None:
        self._redis = redis
        self._samples = (
            None if redis is None else RecentLists(redis, keep=SAMPLES_KEPT, ttl_s=SAMPLES_TTL_S)
        )

    def observe(self, scope: str, what: str, ms: float) -> None:
        """Record one sample without waiting for Redis (a lost sample costs nothing).

        Samples observed while a write is in flight go out together in the next one (a
        group commit, `activities.recent_lists`): a busy worker writes one pipeline for
        many runs' samples instead of one per tool call and model step."""
        if self._samples is not None:
            self._samples.push(f"{KEY_PREFIX}:{scope}:{what}", round(ms, 2))

    async def flush(self) -> None:
        """Wait for the samples pending now (for tests and shutdown)."""
        if self._samples is not None:
            await self._samples.flush()

    async def read(self, scope: str, request: LatencyEstimatesInput) -> LatencyEstimates:
        tools = [t for t in request.tools if t in TOOLS] or list(TOOLS)
        defaults = _defaults(tools)
        if self._redis is None:
            return defaults
        wanted = [f"tool:{t}" for t in tools] + list(MODEL_DEFAULTS_MS)
        try:
            async with asyncio.timeout(READ_TIMEOUT_S):
                async with self._redis.pipeline(transaction=False) as pipe:
                    for what in wanted:
                        pipe.lrange(f"{KEY_PREFIX}:{scope}:{what}", 0, -1)
                    lists = await pipe.execute()
        except (*REDIS_ERRORS, TimeoutError) as exc:
            log.warning("latency_estimates_unavailable", error=str(exc))
            return defaults
        estimates = defaults.model_copy(deep=True)
        estimates.source = "measured"
        for what, raw in zip(wanted, lists, strict=True):
            samples = sorted(float(v) for v in raw)
            if not samples:
                continue
            measured = _estimate(samples)
            if what.startswith("tool:"):
                estimates.tools[what.removeprefix("tool:")] = measured
            else:
                estimates.models[what] = measured
        return estimates


def _estimate(samples: list[float]) -> LatencyEstimate:
    p90 = samples[min(len(samples) - 1, int(0.9 * len(samples)))]
    return LatencyEstimate(p50_ms=statistics.median(samples), p90_ms=p90, samples=len(samples))


def _defaults(tools: list[str]) -> LatencyEstimates:
    return LatencyEstimates(
        tools={
            t: LatencyEstimate(p50_ms=TOOLS[t].expected_ms, p90_ms=TOOLS[t].expected_ms * 2)
            for t in tools
        },
        models={k: LatencyEstimate(p50_ms=v, p90_ms=v * 1.5) for k, v in MODEL_DEFAULTS_MS.items()},
    )


class LatencyActivities:
    """The CPU worker's `latency_estimates` local activity."""

    def __init__(self, book: LatencyBook) -> None:
        self._book = book

    @activity.defn(name=names.LATENCY_ESTIMATES)
    async def latency_estimates(self, request: LatencyEstimatesInput) -> LatencyEstimates:
        return await self._book.read(scope_of(activity.info().task_queue), request)


def timed_tool(method: Callable[[Any], Awaitable[M]], name: str, book: LatencyBook) -> Any:
    """The tool activity `method`, each successful call's duration recorded in `book`
    (as its run saw it: a cached result's time is a cache read's)."""

    @functools.wraps(method, updated=())  # not __dict__: it holds the activity definition
    async def run(args: Any) -> M:
        started = time.perf_counter()
        result = await method(args)
        elapsed = (time.perf_counter() - started) * 1000
        book.observe(scope_of(activity.info().task_queue), f"tool:{name}", elapsed)
        return result

    return activity.defn(name=name)(run)
