"""The cache version the workers of a task queue serve, published in Redis for clients
(who read it with `client.served_version`).

A client's exact-tier fast path must read paths under the version the workers serve now,
not one it computed itself: when the workers start with another catalog (an MCP server's
tool list changed and they restarted, a deploy changed a tool), paths under the old
version are still in Redis until their TTLs end, and a long-lived client (the gateway,
`agentkeel mcp`, a service's `AgentClient`) would go on serving them. So each CPU worker
publishes its version when it starts, and again every `REPUBLISH_EVERY_S` while it runs
(a publication lost to a Redis blip is repaired); a client looks up under whatever version
is published, whatever its own catalog says, so it needs no MCP server of its own. A
worker told that its catalog changed withdraws its version at once (while it is still
the one published), and until a worker publishes again no client answers from its fast
path. Where Redis cannot say, or says "withdrawn", the client starts runs (their lookups
use the workers' version): it may miss when it could have hit, never serve the reverse.
With workers of two versions on one queue (a rollout), the latest publication wins.
"""

from __future__ import annotations

import asyncio

import redis.asyncio as aioredis
import structlog

from agentkeel.activities.redis_errors import REDIS_ERRORS
from agentkeel.schemas.path_cache import WITHDRAWN, served_version_key

__all__ = ["REPUBLISH_EVERY_S", "Publication"]

log = structlog.get_logger(__name__)

REPUBLISH_EVERY_S = 10.0
"""How often a running CPU worker says again what it serves."""


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

    def __init__(
        self, redis: aioredis.Redis, task_queue: str, version: str, namespace: str = "default"
    ) -> None:
        self._redis, self.version = redis, version
        self._key = served_version_key(task_queue, namespace)
        self._pending: set[asyncio.Task[None]] = set()
        self._withdrawn = False

    async def publish(self) -> None:
        """Say the workers of the task queue serve this version (at start, then again every
        `REPUBLISH_EVERY_S`: see `keep_published`). Redis down: nothing is published, and
        every client's lookup misses anyway."""
        if self._withdrawn:
            return
        try:
            await self._redis.set(self._key, self.version)
        except REDIS_ERRORS as exc:
            log.warning("served_version_not_published", key=self._key, error=str(exc))

    async def keep_published(self) -> None:
        """Publish again every `REPUBLISH_EVERY_S` until cancelled or withdrawn."""
        while not self._withdrawn:
            await asyncio.sleep(REPUBLISH_EVERY_S)
            await self.publish()

    def withdraw_soon(self) -> None:
        """The catalog is about to change: clients' fast paths under this version stop."""
        self._withdrawn = True
        task = asyncio.get_running_loop().create_task(self._withdraw())
        self._pending.add(task)
        task.add_done_callback(self._pending.discard)

    async def _withdraw(self) -> None:
        try:
            await self._redis.eval(_WITHDRAW, 1, self._key, self.version, WITHDRAWN)
        except REDIS_ERRORS as exc:
            log.warning("served_version_not_withdrawn", key=self._key, error=str(exc))

    async def settle(self) -> None:
        """Wait for a withdrawal under way (before the Redis client closes)."""
        await asyncio.gather(*self._pending, return_exceptions=True)
