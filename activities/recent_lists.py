"""Short lists of recent values in Redis, written in the background, a group at a time.

What the workers learn from each call (a tool's latency, whether a route was unsure) is
pushed onto a capped list per key and never delays the call: one write is in flight at a
time, and the values observed meanwhile go out together in the next pipeline (a group
commit). A lost value costs nothing; past `WAITING_MAX` waiting values, new ones are
dropped, not queued. Used by `activities.latency` and `activities.forecast_store`.
"""

from __future__ import annotations

import asyncio

import redis.asyncio as aioredis
import structlog

from agentkeel.activities.redis_errors import REDIS_ERRORS

log = structlog.get_logger(__name__)

WAITING_MAX = 4096
"""Values held while Redis is slow; past this, new ones are dropped, not queued."""


class RecentLists:
    """Capped lists, newest first: each keeps its last `keep` values for `ttl_s` of quiet."""

    def __init__(self, redis: aioredis.Redis, *, keep: int, ttl_s: int) -> None:
        self._redis = redis
        self._keep = keep
        self._ttl_s = ttl_s
        self._waiting: list[tuple[str, str | float]] = []
        self._writer: asyncio.Task[None] | None = None

    def push(self, key: str, value: str | float) -> None:
        """Add `value` to `key`'s list without waiting for Redis."""
        if len(self._waiting) >= WAITING_MAX:
            return
        self._waiting.append((key, value))
        if self._writer is None or self._writer.done():
            self._writer = asyncio.get_running_loop().create_task(self._write_waiting())

    async def flush(self) -> None:
        """Wait for the writes pending now (for tests and shutdown)."""
        if self._writer is not None:
            await asyncio.shield(self._writer)

    async def _write_waiting(self) -> None:
        while self._waiting:
            batch, self._waiting = self._waiting, []
            await self._write(batch)

    async def _write(self, batch: list[tuple[str, str | float]]) -> None:
        by_key: dict[str, list[str | float]] = {}
        for key, value in batch:
            by_key.setdefault(key, []).append(value)
        try:
            async with self._redis.pipeline(transaction=False) as pipe:
                for key, values in by_key.items():
                    pipe.lpush(key, *values)  # the newest ends up first, as one at a time
                    pipe.ltrim(key, 0, self._keep - 1)
                    pipe.expire(key, self._ttl_s)  # a key gone quiet leaves nothing behind
                await pipe.execute()
        except REDIS_ERRORS as exc:
            log.debug("recent_values_not_recorded", values=len(batch), error=str(exc))
