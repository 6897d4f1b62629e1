"""Redis as a cache: values with TTLs, an entity index for invalidation, a circuit breaker.

Every method raises `CacheUnavailable` when Redis cannot answer (or the breaker is
open); callers turn that into a miss. Redis is never needed for correctness.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection
from datetime import timedelta
from typing import Any

import redis.asyncio as aioredis
import structlog
from redis.exceptions import RedisError

from agentkeel.activities.cache.breaker import CircuitBreaker

log = structlog.get_logger(__name__)

ENTITY_PREFIX = "agentkeel:entity:"
CHANGED_PREFIX = "agentkeel:entity-changed:"
"""When each entity was last invalidated (epoch seconds), to refuse entries read before it."""


_MS = timedelta(milliseconds=1)

# KEYS: the entry, then each entity's changed-marker, then each entity's index set.
# ARGV: value, entry ttl ms, index ttl ms, read_since (-1: no check), number of entities.
_PUT_UNLESS_CHANGED = """
local n = tonumber(ARGV[5])
local since = tonumber(ARGV[4])
if since >= 0 then
  for i = 2, n + 1 do
    local changed = redis.call('GET', KEYS[i])
    if changed and tonumber(changed) >= since then return 0 end
  end
end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
for i = n + 2, 2 * n + 1 do
  redis.call('SADD', KEYS[i], KEYS[1])
  redis.call('PEXPIRE', KEYS[i], ARGV[3])
end
return 1
"""

# KEYS: each entity's changed-marker, then each entity's index set.
# ARGV: now (epoch s), index ttl ms, number of entities. Returns the entry keys deleted.
_INVALIDATE = """
local n = tonumber(ARGV[3])
local deleted = {}
for i = 1, n do
  redis.call('SET', KEYS[i], ARGV[1], 'PX', ARGV[2])
  local members = redis.call('SMEMBERS', KEYS[n + i])
  for _, key in ipairs(members) do
    if redis.call('DEL', key) == 1 then table.insert(deleted, key) end
  end
  redis.call('DEL', KEYS[n + i])
end
return deleted
"""


class CacheUnavailable(Exception):
    """Redis could not be used; the caller treats it as a miss."""


class CacheBackend:
    def __init__(
        self,
        client: aioredis.Redis,
        *,
        index_ttl: timedelta,
        breaker: CircuitBreaker | None = None,
    ) -> None:
        """`index_ttl`: the longest any entry lives; entity index sets expire after it."""
        self._redis = client
        self._index_ttl = index_ttl
        self.breaker = breaker or CircuitBreaker()
        # Registered scripts run by SHA (EVALSHA): the script text is not resent per write.
        self._put_unless_changed = client.register_script(_PUT_UNLESS_CHANGED)
        self._invalidate = client.register_script(_INVALIDATE)

    async def get(self, key: str) -> bytes | None:
        value: bytes | None = await self._call("get", key)
        return value

    async def mget(self, keys: list[str]) -> list[bytes | None]:
        values: list[bytes | None] = await self._call("mget", keys)
        return values

    async def put(
        self,
        key: str,
        value: str,
        ttl: timedelta,
        entities: Collection[str],
        *,
        read_since: float | None = None,
    ) -> bool:
        """Store `value`, and index it under each entity so `invalidate` can find it.

        `read_since`: when the data in `value` started being read (epoch seconds). If any of
        its entities was invalidated after that, the value may predate the change and is
        not stored (returns False): a run that read an order before a refund must not
        cache what it saw after the refund's invalidation. Check and write are one script,
        so an invalidation cannot slip in between.
        """
        names = [CHANGED_PREFIX + e for e in entities] + [ENTITY_PREFIX + e for e in entities]
        stored = await self._call(
            self._put_unless_changed,
            keys=[key, *names],
            args=[
                value,
                int(ttl / _MS),
                int(self._index_ttl / _MS),
                -1 if read_since is None else read_since,
                len(entities),
            ],
        )
        return bool(stored)

    async def set(self, key: str, value: str, ttl: timedelta) -> None:
        """A plain value with a TTL, outside the entity index (a tier's pointer)."""
        await self._call("set", key, value, px=int(ttl / _MS))

    async def delete(self, *keys: str) -> int:
        return int(await self._call("delete", *keys)) if keys else 0

    async def invalidate(self, entities: Collection[str]) -> list[str]:
        """Delete every entry indexed under any of `entities`; returns the keys deleted.

        Bypasses the circuit breaker: after a side effect, trying costs less than serving
        what it made stale.
        """
        try:
            deleted = await self._invalidate(
                keys=[
                    *(CHANGED_PREFIX + e for e in entities),
                    *(ENTITY_PREFIX + e for e in entities),
                ],
                args=[time.time(), int(self._index_ttl / _MS), len(entities)],
            )
        except (RedisError, OSError) as exc:
            raise CacheUnavailable(str(exc)) from exc
        return sorted(k.decode() if isinstance(k, bytes) else k for k in deleted)

    async def _call(self, command: str | Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """Run a Redis command (by name) or a registered script, through the breaker."""
        if not self.breaker.allow():
            raise CacheUnavailable("circuit open")
        run = getattr(self._redis, command) if isinstance(command, str) else command
        settled = False
        try:
            result = await run(*args, **kwargs)
            settled = True
        except (RedisError, OSError) as exc:
            settled = True
            self._failed(exc)
        finally:
            if not settled:  # cancelled mid-call: neither success nor failure was learned
                self.breaker.release_trial()
        self.breaker.record_success()
        return result

    def _failed(self, exc: BaseException) -> None:
        was_open = self.breaker.is_open
        self.breaker.record_failure()
        if not was_open:
            log.warning(
                "cache_circuit_opened", error=str(exc), retry_in_s=self.breaker.reset_after_s
            )
        raise CacheUnavailable(str(exc)) from exc
