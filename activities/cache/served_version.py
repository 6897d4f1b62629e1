"""The cache version the workers of a task queue serve, published in Redis for clients.

A client's exact-tier fast path reads paths under its own cache version (catalog digest +
policy version). While that is the workers' version it serves what they stored. When the
workers start with another catalog (an MCP server's tool list changed and they restarted,
a deploy changed a tool), paths stored under the old version are still in Redis until
their TTLs end; a long-lived client that computed its version before the change (the
gateway, `agentkeel mcp`, a service's `AgentClient`) would go on serving them. So each CPU
worker publishes its version when it starts, and a client serves from its fast path only
while the published version is its own: otherwise it starts runs, whose lookups use the
workers' version. The last worker to start wins; in a fleet half restarted, a client may
miss when it could have hit, never the reverse.
"""

from __future__ import annotations

import time

import redis.asyncio as aioredis
import structlog

from agentkeel.activities.redis_errors import REDIS_ERRORS

__all__ = ["CHECK_EVERY_S", "ServedVersion", "publish_served_version", "served_version_key"]

log = structlog.get_logger(__name__)

KEY_PREFIX = "agentkeel:served:v1"
CHECK_EVERY_S = 1.0
"""How long a client trusts the version it read: the fast path's only extra Redis read is
once a second at most, and a client learns of restarted workers within about that."""


def served_version_key(task_queue: str) -> str:
    return f"{KEY_PREFIX}:{task_queue}"


async def publish_served_version(redis: aioredis.Redis, task_queue: str, version: str) -> None:
    """Say that the workers of `task_queue` serve `version` (a worker, at start). Redis
    down: nothing is published, and every client's lookup misses anyway."""
    try:
        await redis.set(served_version_key(task_queue), version)
    except REDIS_ERRORS as exc:
        log.warning("served_version_not_published", task_queue=task_queue, error=str(exc))


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
