"""Redis as a cache: values with TTLs, an entity index for invalidation, a circuit breaker.

Every method raises `CacheUnavailable` when Redis cannot answer (or the breaker is
open); callers turn that into a miss. Redis is never needed for correctness.

On a Redis Cluster each script names only keys of one slot: a tenant's
(`schemas.path_cache.tenant_tag`).
Entity markers and index sets are per tenant, like the entries they index.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection
from datetime import timedelta
from typing import Any

import redis.asyncio as aioredis
import structlog
from redis.asyncio.cluster import RedisCluster

from agentkeel.activities.cache.breaker import CircuitBreaker
from agentkeel.activities.redis_errors import REDIS_ERRORS
from agentkeel.schemas.path_cache import tenant_tag

log = structlog.get_logger(__name__)

ENTITY_PREFIX = "agentkeel:entity:v2:"
"""v2: per tenant, under its slot's tag (v1 sets, shared by every tenant, are never read)."""
CHANGED_PREFIX = "agentkeel:entity-changed:v2:"
"""When each entity was last invalidated (epoch seconds), to refuse entries read before it."""


def entity_names(tenant: str, entities: Collection[str]) -> tuple[list[str], list[str]]:
    """The tenant's changed-markers and index sets of `entities`, all in the tenant's slot."""
    scope = f"{tenant_tag(tenant)}:{tenant}:"
    return (
        [f"{CHANGED_PREFIX}{scope}{e}" for e in entities],
        [f"{ENTITY_PREFIX}{scope}{e}" for e in entities],
    )


_MS = timedelta(milliseconds=1)

CLOCK_SKEW_MARGIN_S = 2.0
"""Taken off a write's `read_since`: the invalidation it is checked against was stamped by
another host's clock, which may run behind this one's."""

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
# ARGV: now (epoch s), index ttl ms, number of entities. Returns the entry keys indexed.
# The entries themselves are deleted by the caller, by name: a script may touch only the keys
# it declares (Redis Cluster routes by them). Marking first makes that safe: from the SET on,
# no entry read before it is stored, so the entries taken here are all that can be stale.
_MARK_CHANGED = """
local n = tonumber(ARGV[3])
local indexed = {}
for i = 1, n do
  redis.call('SET', KEYS[i], ARGV[1], 'PX', ARGV[2])
  for _, key in ipairs(redis.call('SMEMBERS', KEYS[n + i])) do
    table.insert(indexed, key)
  end
  redis.call('DEL', KEYS[n + i])
end
return indexed
"""


class CacheUnavailable(Exception):
    """Redis could not be used; the caller treats it as a miss."""


class CacheBackend:
    def __init__(
        self,
        client: aioredis.Redis | RedisCluster,
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
        self._mark_changed = client.register_script(_MARK_CHANGED)
        self._cluster = isinstance(client, RedisCluster)

    async def get(self, key: str) -> bytes | None:
        value: bytes | None = await self._call("get", key)
        return value

    async def mget(self, keys: list[str]) -> list[bytes | None]:
        """Values of `keys`, in order; on a cluster read slot by slot (not one snapshot)."""
        values: list[bytes | None] = await self._call(
            "mget_nonatomic" if self._cluster else "mget", keys
        )
        return values

    async def put(
        self,
        key: str,
        value: str,
        ttl: timedelta,
        entities: Collection[str],
        *,
        tenant: str,
        read_since: float | None = None,
    ) -> bool:
        """Store `value`, and index it under each entity so `invalidate` can find it.

        `read_since`: when the data in `value` started being read (epoch seconds). If any of
        its entities was invalidated after that, the value may predate the change and is
        not stored (returns False): a run that read an order before a refund must not
        cache what it saw after the refund's invalidation. Check and write are one script,
        so an invalidation cannot slip in between. `key` must carry `tenant`'s tag.
        """
        markers, indexes = entity_names(tenant, entities)
        names = markers + indexes
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

    async def invalidate(self, entities: Collection[str], *, tenant: str) -> list[str]:
        """Delete every entry of `tenant` indexed under any of `entities`; returns the keys
        deleted.

        Bypasses the circuit breaker: after a side effect, trying costs less than serving
        what it made stale.
        """
        if not entities:
            return []
        markers, indexes = entity_names(tenant, entities)
        try:
            indexed = await self._mark_changed(
                keys=[*markers, *indexes],
                args=[time.time(), int(self._index_ttl / _MS), len(entities)],
            )
            keys = sorted({k.decode() if isinstance(k, bytes) else str(k) for k in indexed})
            deleted: list[str] = []
            if keys:  # one DEL each, in one round trip, to learn which were still there
                async with self._redis.pipeline(transaction=False) as pipe:
                    for key in keys:
                        pipe.delete(key)
                    gone = await pipe.execute()
                deleted = [key for key, n in zip(keys, gone, strict=True) if n]
        except REDIS_ERRORS as exc:
            raise CacheUnavailable(str(exc)) from exc
        return deleted

    async def _call(self, command: str | Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """Run a Redis command (by name) or a registered script, through the breaker."""
        if not self.breaker.allow():
            raise CacheUnavailable("circuit open")
        run = getattr(self._redis, command) if isinstance(command, str) else command
        settled = False
        try:
            result = await run(*args, **kwargs)
            settled = True
        except REDIS_ERRORS as exc:
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
