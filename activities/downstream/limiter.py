"""Caps per downstream service across every worker: leases in Redis that expire.

Temporal bounds concurrency per worker (activity slots) but not across workers, so the
global cap is a semaphore of our own: a sorted set per downstream whose members are
leases scored by their expiry. A call takes a lease when fewer than the cap are live and
gives it back when done; a worker that dies holding leases loses them when they expire
(the tool's timeout plus a margin), so a crash never shrinks the cap for long, and no
lease is held across a run's waits, so a run can never deadlock on one. A rate, when
set, is a second sorted set of the starts in the last second.

While a call waits for a lease its activity heartbeats what it waits for (the Web UI
shows it on the pending activity); the wait is bounded by the activity's own timeout.
Without Redis the cap falls back to this process alone (logged once).
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager

import redis.asyncio as aioredis
import structlog
from redis.exceptions import RedisError
from temporalio import activity

from schemas.tools.downstreams import DownstreamLimit

log = structlog.get_logger(__name__)

KEY_PREFIX = "agentkeel:downstream:v1"
POLL_S = (0.005, 0.01, 0.02, 0.05)
"""Backoff between attempts to take a lease (the last one repeats)."""
REPORT_AFTER_S = 0.2
"""A wait longer than this is reported (`on_wait`): the run shows the call as waiting."""

OnWait = Callable[[bool, float], Awaitable[None]]
"""Told `(True, seconds so far)` once a wait is long, then `(False, seconds)` when it ends."""

# KEYS[1] leases, KEYS[2] starts; ARGV: now, cap (0: none), rate (0: none), lease expiry, id
_TAKE = """
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', ARGV[1] - 1)
local cap = tonumber(ARGV[2])
local rate = tonumber(ARGV[3])
if cap > 0 and redis.call('ZCARD', KEYS[1]) >= cap then return 0 end
if rate > 0 and redis.call('ZCARD', KEYS[2]) >= rate then return 0 end
redis.call('ZADD', KEYS[1], ARGV[4], ARGV[5])
redis.call('ZADD', KEYS[2], ARGV[1], ARGV[5])
redis.call('EXPIRE', KEYS[1], 3600)
redis.call('EXPIRE', KEYS[2], 60)
return 1
"""


class DownstreamLimiter:
    def __init__(
        self,
        redis: aioredis.Redis | None,
        limits: Mapping[str, DownstreamLimit],
        *,
        namespace: str = "default",
    ) -> None:
        self._redis = redis
        self._limits = dict(limits)
        self._namespace = namespace
        self._take = redis.register_script(_TAKE) if redis is not None else None
        self._local = {
            name: asyncio.Semaphore(limit.concurrency)
            for name, limit in limits.items()
            if limit.concurrency is not None
        }
        self._warned = False

    def limit_of(self, downstream: str) -> DownstreamLimit:
        return self._limits.get(downstream, DownstreamLimit())

    @asynccontextmanager
    async def slot(
        self, downstream: str, *, lease_s: float, on_wait: OnWait | None = None
    ) -> AsyncIterator[float]:
        """Hold one of `downstream`'s slots; yields the seconds spent waiting for it."""
        limit = self.limit_of(downstream)
        if limit.concurrency is None and limit.rate is None:
            yield 0.0
            return
        started = time.monotonic()
        lease = await self._lease(downstream, limit, lease_s, on_wait)
        waited = time.monotonic() - started
        if lease is None:  # no Redis: this process's share of the cap
            async with self._local_slot(downstream):
                yield time.monotonic() - started
            return
        try:
            yield waited
        finally:
            await self._give_back(downstream, lease)

    @asynccontextmanager
    async def _local_slot(self, downstream: str) -> AsyncIterator[None]:
        semaphore = self._local.get(downstream)
        if semaphore is None:
            yield
            return
        async with semaphore:
            yield

    def _keys(self, downstream: str) -> list[str]:
        base = f"{KEY_PREFIX}:{self._namespace}:{downstream}"
        return [f"{base}:leases", f"{base}:starts"]

    async def _lease(
        self,
        downstream: str,
        limit: DownstreamLimit,
        lease_s: float,
        on_wait: OnWait | None = None,
    ) -> str | None:
        if self._take is None:
            return None
        lease = uuid.uuid4().hex
        attempt = 0
        started = time.monotonic()
        reported = False
        while True:
            now = time.time()
            try:
                taken = await self._take(
                    keys=self._keys(downstream),
                    args=[now, limit.concurrency or 0, limit.rate or 0, now + lease_s, lease],
                )
            except (RedisError, OSError) as exc:
                if not self._warned:
                    log.warning("downstream_limiter_local", downstream=downstream, error=str(exc))
                    self._warned = True
                return None
            if taken:
                if reported and on_wait is not None:
                    await on_wait(False, time.monotonic() - started)
                return lease
            if on_wait is not None and not reported and time.monotonic() - started > REPORT_AFTER_S:
                reported = True
                await on_wait(True, time.monotonic() - started)
            if activity.in_activity():
                activity.heartbeat(f"waiting for a {downstream} slot")
            await asyncio.sleep(POLL_S[min(attempt, len(POLL_S) - 1)])
            attempt += 1

    async def _give_back(self, downstream: str, lease: str) -> None:
        assert self._redis is not None
        try:
            await self._redis.zrem(self._keys(downstream)[0], lease)
        except (RedisError, OSError) as exc:  # it expires on its own
            log.warning("downstream_lease_not_returned", downstream=downstream, error=str(exc))
