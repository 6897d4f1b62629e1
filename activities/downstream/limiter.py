"""Caps per downstream service across every worker: leases in Redis that expire.

Temporal bounds concurrency per worker (activity slots) but not across workers, so the
global cap is a semaphore of our own: a sorted set per downstream whose members are
leases scored by their expiry. A call takes a lease when fewer than the cap are live and
gives it back when done; a worker that dies holding leases loses them when they expire
(the tool's timeout plus a margin), so a crash never shrinks the cap for long, and no
lease is held across a run's waits, so a run can never deadlock on one. A rate, when
set, is a second sorted set of the starts in the last second. Each tenant's leases are
also counted apart: while other tenants call the same downstream (within the last 2 s), one
tenant may hold at most its share of the cap (`AGENTKEEL_TENANT_DOWNSTREAM_SHARE`, half by
default), so another tenant always finds a slot; a tenant alone uses the whole cap.

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
from temporalio import activity

from agentkeel.activities.redis_errors import REDIS_ERRORS
from agentkeel.schemas.tools.downstreams import DownstreamLimit

log = structlog.get_logger(__name__)

KEY_PREFIX = "agentkeel:downstream:v1"
POLL_S = (0.005, 0.01, 0.02, 0.05)
"""Backoff between attempts to take a lease (the last one repeats)."""
REPORT_AFTER_S = 0.2
"""A wait longer than this is reported (`on_wait`): the run shows the call as waiting."""

OnWait = Callable[[bool, float], Awaitable[None]]
"""Told `(True, seconds so far)` once a wait is long, then `(False, seconds)` when it ends."""

# KEYS[1] leases, KEYS[2] starts, KEYS[3] the tenant's leases, KEYS[4] tenants seen lately;
# ARGV: cap (0: none), rate per second (0: none), lease seconds, lease id, the tenant's cap
# (0: none), the tenant. The tenant's cap holds only while another tenant has asked within
# TENANTS_WINDOW_S: a tenant alone uses the whole cap. Time is the Redis
# server's own: workers' clocks may disagree.
# A rate below one per second gets a longer window (0.5/s: one start per 2 s).
_TAKE = """
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
local cap = tonumber(ARGV[1])
local rate = tonumber(ARGV[2])
local window = 1
local allowed = rate
if rate > 0 and rate < 1 then
    window = 1 / rate
    allowed = 1
end
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now - window)
redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', now)
local tenant_cap = tonumber(ARGV[5])
redis.call('ZADD', KEYS[4], now, ARGV[6])
redis.call('ZREMRANGEBYSCORE', KEYS[4], '-inf', now - 2)
redis.call('EXPIRE', KEYS[4], 60)
if cap > 0 and redis.call('ZCARD', KEYS[1]) >= cap then return 0 end
if tenant_cap > 0 and redis.call('ZCARD', KEYS[4]) > 1
        and redis.call('ZCARD', KEYS[3]) >= tenant_cap then
    return 0
end
if rate > 0 and redis.call('ZCARD', KEYS[2]) >= allowed then return 0 end
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[3]), ARGV[4])
redis.call('ZADD', KEYS[3], now + tonumber(ARGV[3]), ARGV[4])
redis.call('ZADD', KEYS[2], now, ARGV[4])
redis.call('EXPIRE', KEYS[1], 3600)
redis.call('EXPIRE', KEYS[3], 3600)
redis.call('EXPIRE', KEYS[2], math.ceil(window) + 60)
return 1
"""


class DownstreamLimiter:
    def __init__(
        self,
        redis: aioredis.Redis | None,
        limits: Mapping[str, DownstreamLimit],
        *,
        namespace: str = "default",
        tenant_share: float = 1.0,
    ) -> None:
        self._redis = redis
        self._tenant_share = tenant_share
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
        self,
        downstream: str,
        *,
        lease_s: float,
        on_wait: OnWait | None = None,
        tenant: str = "default",
    ) -> AsyncIterator[float]:
        """Hold one of `downstream`'s slots for `tenant`; yields the seconds spent waiting."""
        limit = self.limit_of(downstream)
        if limit.concurrency is None and limit.rate is None:
            yield 0.0
            return
        started = time.monotonic()
        reported = False

        async def report_long_wait() -> None:
            nonlocal reported
            if on_wait is not None and not reported:
                reported = True
                await on_wait(True, time.monotonic() - started)

        keys = self._keys(downstream, tenant)
        lease = await self._lease(keys, downstream, limit, lease_s, report_long_wait)
        try:
            if lease is None:  # no Redis: this process's share of the cap
                async with self._local_slot(downstream):
                    yield await self._waited(started, reported, on_wait)
                return
            yield await self._waited(started, reported, on_wait)
        finally:
            # Also when cancelled right after the lease was taken: never left to expire.
            if lease is not None:
                await asyncio.shield(self._give_back(keys, downstream, lease))

    @staticmethod
    async def _waited(started: float, reported: bool, on_wait: OnWait | None) -> float:
        waited = time.monotonic() - started
        if reported and on_wait is not None:
            await on_wait(False, waited)
        return waited

    @asynccontextmanager
    async def _local_slot(self, downstream: str) -> AsyncIterator[None]:
        semaphore = self._local.get(downstream)
        if semaphore is None:
            yield
            return
        async with semaphore:
            yield

    def _keys(self, downstream: str, tenant: str) -> list[str]:
        # One hash tag: every key on one node of a Redis Cluster, as the script needs.
        base = f"{KEY_PREFIX}:{{{self._namespace}:{downstream}}}"
        return [f"{base}:leases", f"{base}:starts", f"{base}:tenant:{tenant}", f"{base}:tenants"]

    def _tenant_cap(self, limit: DownstreamLimit) -> int:
        if limit.concurrency is None or self._tenant_share >= 1:
            return 0
        return max(1, int(limit.concurrency * self._tenant_share))

    async def _lease(
        self,
        keys: list[str],
        downstream: str,
        limit: DownstreamLimit,
        lease_s: float,
        report_long_wait: Callable[[], Awaitable[None]],
    ) -> str | None:
        if self._take is None:
            return None
        lease = uuid.uuid4().hex
        attempt = 0
        started = time.monotonic()
        while True:
            try:
                taken = await self._take(
                    keys=keys,
                    args=[
                        limit.concurrency or 0,
                        limit.rate or 0,
                        lease_s,
                        lease,
                        self._tenant_cap(limit),
                        keys[2].rpartition(":tenant:")[2],
                    ],
                )
            except REDIS_ERRORS as exc:
                if not self._warned:
                    log.warning("downstream_limiter_local", downstream=downstream, error=str(exc))
                    self._warned = True
                return None
            except asyncio.CancelledError:
                # The script may have run: give back what it may have taken.
                await asyncio.shield(self._give_back(keys, downstream, lease))
                raise
            self._warned = False
            if taken:
                return lease
            if time.monotonic() - started > REPORT_AFTER_S:
                await report_long_wait()
            if activity.in_activity():
                activity.heartbeat(f"waiting for a {downstream} slot")
            await asyncio.sleep(POLL_S[min(attempt, len(POLL_S) - 1)])
            attempt += 1

    async def _give_back(self, keys: list[str], downstream: str, lease: str) -> None:
        assert self._redis is not None
        leases, _, tenant_leases, _ = keys
        try:
            async with self._redis.pipeline(transaction=False) as pipe:
                pipe.zrem(leases, lease)
                pipe.zrem(tenant_leases, lease)
                await pipe.execute()
        except REDIS_ERRORS as exc:  # it expires on its own
            log.warning("downstream_lease_not_returned", downstream=downstream, error=str(exc))
