"""Plan-ahead's forecast, shared by every inference worker through Redis.

Whether to start the planner beside the router depends on how a tenant's recent routes
went (`activities.plan_ahead.UnsureForecast`). Kept in one process's memory, that history
starts empty on every worker and after every restart, so each cold worker pays route,
then plan, until it has seen a few routes of its own. Here every worker appends what its
routes showed to one short list per deployment and tenant, and a worker that has not
seen a tenant lately reads the list once, so a new or restarted worker plans ahead from
its first request.

Redis is an accelerator, never a dependency: a write is in the background (a lost one
costs nothing), a read waits at most `READ_TIMEOUT_S`, and an unreachable Redis leaves
each worker with its own memory, as without a store.
"""

from __future__ import annotations

import asyncio

import redis.asyncio as aioredis
import structlog

from agentkeel.activities.redis_errors import REDIS_ERRORS

log = structlog.get_logger(__name__)

KEY_PREFIX = "agentkeel:forecast:v1"
ROUTES_TTL_S = 7 * 24 * 3600
"""A tenant that routes nothing for a week starts over."""
READ_TIMEOUT_S = 0.05
"""The longest a route waits for a tenant's history before deciding on what it knows."""
WAITING_MAX = 4096
"""Observations held while Redis is slow; past this, new ones are dropped, not queued."""


class ForecastStore:
    """Recent routes per deployment scope and tenant: `1` unsure, `0` served, newest first."""

    def __init__(self, redis: aioredis.Redis, *, window: int = 20) -> None:
        self._redis = redis
        self._window = window
        self._waiting: list[tuple[str, str]] = []
        self._writer: asyncio.Task[None] | None = None

    @staticmethod
    def key(scope: str, tenant: str) -> str:
        return f"{KEY_PREFIX}:{scope}:{tenant}"

    def record(self, scope: str, tenant: str, unsure: bool) -> None:
        """Append one route's outcome without waiting (written with any others pending)."""
        if len(self._waiting) >= WAITING_MAX:
            return
        self._waiting.append((self.key(scope, tenant), "1" if unsure else "0"))
        if self._writer is None or self._writer.done():
            self._writer = asyncio.get_running_loop().create_task(self._write_waiting())

    async def recent(self, scope: str, tenant: str) -> list[bool] | None:
        """The tenant's recent routes, oldest first ([] when none); None when Redis could
        not say in time."""
        try:
            async with asyncio.timeout(READ_TIMEOUT_S):
                raw = await self._redis.lrange(self.key(scope, tenant), 0, self._window - 1)
        except (TimeoutError, *REDIS_ERRORS) as exc:
            log.debug("forecast_read_failed", error=repr(exc))
            return None
        return [value in (b"1", "1") for value in reversed(raw)]

    async def flush(self) -> None:
        """Wait for the writes pending now (for tests and shutdown)."""
        if self._writer is not None:
            await asyncio.shield(self._writer)

    async def _write_waiting(self) -> None:
        while self._waiting:
            batch, self._waiting = self._waiting, []
            try:
                async with self._redis.pipeline(transaction=False) as pipe:
                    for key, value in batch:
                        pipe.lpush(key, value)
                        pipe.ltrim(key, 0, self._window - 1)
                        pipe.expire(key, ROUTES_TTL_S)
                    await pipe.execute()
            except REDIS_ERRORS as exc:
                log.debug("forecast_write_failed", error=repr(exc), dropped=len(batch))
