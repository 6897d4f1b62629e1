"""Plan-ahead's forecast, shared by every inference worker through Redis.

Whether to start the planner beside the router depends on how a tenant's recent routes
went (`activities.plan_ahead.UnsureForecast`). Kept in one process's memory, that history
starts empty on every worker and after every restart, so each cold worker pays route,
then plan, until it has seen a few routes of its own. Here every worker appends what its
routes showed to one short list per deployment and tenant, and a worker that has not
seen a tenant lately reads the list once, so a new or restarted worker plans ahead from
its first request. A second list per deployment holds every tenant's routes: a tenant too
new to have a history of its own is forecast from its deployment's.

Redis is an accelerator, never a dependency: a write is in the background
(`activities.recent_lists`: a lost one costs nothing), a read waits at most
`READ_TIMEOUT_S`, and an unreachable Redis leaves each worker its own memory.
"""

from __future__ import annotations

import asyncio

import redis.asyncio as aioredis
import structlog

from agentkeel.activities.recent_lists import RecentLists
from agentkeel.activities.redis_errors import REDIS_ERRORS

log = structlog.get_logger(__name__)

KEY_PREFIX = "agentkeel:forecast:v1"
DEPLOYMENT_PREFIX = "agentkeel:forecast-all:v1"
"""Every tenant's routes in one list per deployment (a prefix of its own, so that no
tenant's name can be taken for it)."""
ROUTES_TTL_S = 7 * 24 * 3600
"""A tenant that routes nothing for a week starts over."""
READ_TIMEOUT_S = 0.05
"""The longest a route waits for a tenant's history before deciding on what it knows."""


class ForecastStore:
    """Recent routes per deployment scope and tenant: `1` unsure, `0` served, newest first."""

    def __init__(self, redis: aioredis.Redis, *, window: int = 20) -> None:
        self._redis = redis
        self._window = window
        self._routes = RecentLists(redis, keep=window, ttl_s=ROUTES_TTL_S)

    @staticmethod
    def key(scope: str, tenant: str) -> str:
        return f"{KEY_PREFIX}:{scope}:{tenant}"

    @staticmethod
    def deployment_key(scope: str) -> str:
        return f"{DEPLOYMENT_PREFIX}:{scope}"

    def record(self, scope: str, tenant: str, unsure: bool) -> None:
        """Append one route's outcome to its tenant's list and its deployment's, without
        waiting (written with any others pending)."""
        outcome = "1" if unsure else "0"
        self._routes.push(self.key(scope, tenant), outcome)
        self._routes.push(self.deployment_key(scope), outcome)

    async def histories(self, scope: str, tenant: str) -> tuple[list[bool], list[bool]] | None:
        """The tenant's recent routes and its deployment's (every tenant's), oldest first
        ([] when none), read in one round trip; None when Redis could not say in time."""
        last = self._window - 1
        try:
            async with asyncio.timeout(READ_TIMEOUT_S):
                async with self._redis.pipeline(transaction=False) as pipe:
                    pipe.lrange(self.key(scope, tenant), 0, last)
                    pipe.lrange(self.deployment_key(scope), 0, last)
                    tenant_raw, deployment_raw = await pipe.execute()
        except (TimeoutError, *REDIS_ERRORS) as exc:
            log.debug("forecast_read_failed", error=repr(exc))
            return None
        return _outcomes(tenant_raw), _outcomes(deployment_raw)

    async def flush(self) -> None:
        """Wait for the writes pending now (for tests and shutdown)."""
        await self._routes.flush()


def _outcomes(raw: list[bytes | str]) -> list[bool]:
    """A list as stored (newest first) as outcomes oldest first: `True` unsure."""
    return [value in (b"1", "1") for value in reversed(raw)]
