"""The cache version the workers of a task queue serve, published in Redis for clients.

A client's exact-tier fast path reads paths under its own cache version (catalog digest +
policy version). While that is the workers' version it serves what they stored. When the
workers start with another catalog (an MCP server's tool list changed and they restarted,
a deploy changed a tool), paths stored under the old version are still in Redis until
their TTLs end; a long-lived client that computed its version before the change (the
gateway, `agentkeel mcp`, a service's `AgentClient`) would go on serving them. So each CPU
worker publishes its version when it starts, and a client serves from its fast path only
while the published version is its own: otherwise it starts runs, whose lookups use the
workers' version. A worker told that its catalog changed withdraws its version at once
(while it is still the one published), so no client serves the old tools' paths while the
worker restarts. The last worker to start wins; in a fleet half restarted, a client may
miss when it could have hit, never the reverse.
"""

from __future__ import annotations

import asyncio
import time

import redis.asyncio as aioredis
import structlog

from agentkeel.activities.redis_errors import REDIS_ERRORS

__all__ = ["CHECK_EVERY_S", "Publication", "ServedVersion", "served_version_key"]

log = structlog.get_logger(__name__)

KEY_PREFIX = "agentkeel:served:v1"
CHECK_EVERY_S = 1.0
"""How long a client trusts the version it read: the fast path's only extra Redis read is
once a second at most, and a client learns of restarted workers within about that."""


def served_version_key(task_queue: str) -> str:
    return f"{KEY_PREFIX}:{task_queue}"


_WITHDRAW = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('SET', KEYS[1], ARGV[2])
end
return nil
"""
"""Replace the published version only while it is this worker's: a worker that restarted
first has published the new one, which must stand."""


class Publication:
    """The version one CPU worker serves, as it publishes and withdraws it."""

    def __init__(self, redis: aioredis.Redis, task_queue: str, version: str) -> None:
        self._redis, self._key, self.version = redis, served_version_key(task_queue), version
        self._pending: set[asyncio.Task[None]] = set()

    async def publish(self) -> None:
        """Say the workers of the task queue serve this version (at start). Redis down:
        nothing is published, and every client's lookup misses anyway."""
        try:
            await self._redis.set(self._key, self.version)
        except REDIS_ERRORS as exc:
            log.warning("served_version_not_published", key=self._key, error=str(exc))

    def withdraw_soon(self) -> None:
        """The catalog is about to change: clients' fast paths under this version stop."""
        task = asyncio.get_running_loop().create_task(self._withdraw())
        self._pending.add(task)
        task.add_done_callback(self._pending.discard)

    async def _withdraw(self) -> None:
        try:
            await self._redis.eval(_WITHDRAW, 1, self._key, self.version, "withdrawn")
        except REDIS_ERRORS as exc:
            log.warning("served_version_not_withdrawn", key=self._key, error=str(exc))

    async def settle(self) -> None:
        """Wait for a withdrawal under way (before the Redis client closes)."""
        await asyncio.gather(*self._pending, return_exceptions=True)


class ServedVersion:
    """What the workers of `task_queue` serve, as a client reads it (kept `CHECK_EVERY_S`)."""

    def __init__(self, redis: aioredis.Redis, task_queue: str) -> None:
        self._redis, self._key = redis, served_version_key(task_queue)
        self._value: str | None = None
        self._read_at = float("-inf")

    async def current(self) -> str | None:
        """The published version; None when none is (no worker started since) or Redis
        cannot say (the lookup that follows will find out)."""
        now = time.monotonic()
        if now - self._read_at < CHECK_EVERY_S:
            return self._value
        try:
            raw = await self._redis.get(self._key)
        except REDIS_ERRORS:
            return None
        self._value = raw.decode() if isinstance(raw, bytes) else raw
        self._read_at = now
        return self._value
