"""One cap on model calls in flight across every inference worker of a deployment.

Each inference worker admits `AGENTKEEL_INFERENCE_CONCURRENCY` model activities (or its
engine's batch size); N workers in front of one shared OpenAI-compatible server (vLLM) would
send it N times that. With `AGENTKEEL_MODEL_CONCURRENCY` set, every call first takes a lease
in Redis, the same leases the downstream caps use (`activities.downstream.limiter`): a
lease of a worker that died expires after the longest a model call may take, so a SIGKILL
never keeps a slot. Without Redis each worker holds the whole cap itself (logged).

The cap counts light and heavy calls together: it is meant for the usual fleet, whose tiers
share one model server (or one server per worker, where it is not needed: leave it 0).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import redis.asyncio as aioredis

from agentkeel.activities.downstream.limiter import DownstreamLimiter
from agentkeel.schemas.tools.downstreams import DownstreamLimit

MODEL_SERVER = "model-server"
"""The name the cap's leases go under, beside the downstream services' caps."""


class ModelSlots:
    def __init__(
        self, redis: aioredis.Redis | None, concurrency: int, *, namespace: str, lease_s: float
    ) -> None:
        """`concurrency`: calls in flight across all workers (0: no cap). `namespace`: the
        deployment's (its task queue), so two sharing one Redis count apart. `lease_s`: the
        longest a model activity may run (its start-to-close timeout)."""
        self._lease_s = lease_s
        self._limiter = (
            DownstreamLimiter(
                redis, {MODEL_SERVER: DownstreamLimit(concurrency=concurrency)}, namespace=namespace
            )
            if concurrency
            else None
        )

    @asynccontextmanager
    async def slot(self) -> AsyncIterator[None]:
        """Hold one model call's slot (at once when there is no cap)."""
        if self._limiter is None:
            yield
            return
        async with self._limiter.slot(MODEL_SERVER, lease_s=self._lease_s):
            yield
