"""The cache version the workers serve, as a client reads it before its fast path.

The workers publish what they serve (`activities.cache.served_version`, under
`schemas.path_cache.served_version_key`); a client looks paths up under that version,
whatever its own catalog says, so it needs no MCP server of its own and stops serving
paths of an old catalog within `CHECK_EVERY_S` of the workers' change.
"""

from __future__ import annotations

import time

import redis.asyncio as aioredis
from redis.exceptions import RedisClusterException, RedisError

from agentkeel.schemas.path_cache import WITHDRAWN, served_version_key

CHECK_EVERY_S = 1.0
"""How long a client trusts the version it read: the fast path's only extra Redis read is
once a second at most, and a client learns of restarted workers within about that."""
REDIS_ERRORS = (RedisError, RedisClusterException, OSError)
"""A single server's or a cluster's way of not answering: the fast path then serves nothing."""


class ServedVersion:
    """What the workers of `task_queue` serve, as a client reads it (kept `CHECK_EVERY_S`,
    a failed read too, so a Redis outage costs a request no extra wait)."""

    def __init__(self, redis: aioredis.Redis, task_queue: str, namespace: str = "default") -> None:
        self._redis, self._key = redis, served_version_key(task_queue, namespace)
        self._value: str | None = None
        self._read_at = float("-inf")

    async def current(self, unpublished: str | None) -> str | None:
        """The version to look paths up under: the published one; `unpublished` when no
        worker has published (workers of a release before publication existed); None,
        serve nothing, when it was withdrawn or Redis cannot say."""
        now = time.monotonic()
        if now - self._read_at >= CHECK_EVERY_S:
            self._read_at = now
            try:
                raw = await self._redis.get(self._key)
            except REDIS_ERRORS:
                self._value = WITHDRAWN
            else:
                value = raw.decode() if isinstance(raw, bytes) else raw
                self._value = value
        if self._value is None:
            return unpublished
        return None if self._value == WITHDRAWN else self._value
