"""Redis as a cache: values with TTLs, an entity index for invalidation, a circuit breaker.

Every method raises `CacheUnavailable` when Redis cannot answer (or the breaker is
open); callers turn that into a miss. Redis is never needed for correctness.
"""

from __future__ import annotations

import time
from collections.abc import Collection
from datetime import timedelta
from typing import Any

import redis.asyncio as aioredis
import structlog
from redis.exceptions import RedisError

from activities.breaker import CircuitBreaker

log = structlog.get_logger(__name__)

ENTITY_PREFIX = "agentkeel:entity:"
CHANGED_PREFIX = "agentkeel:entity-changed:"
"""When each entity was last invalidated (epoch seconds), to refuse entries read before it."""


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

    async def get(self, key: str) -> bytes | None:
        value: bytes | None = await self._call("get", key)
        return value

    async def pttl_ms(self, key: str) -> int:
        """Milliseconds left on `key` (negative when it does not exist)."""
        return int(await self._call("pttl", key))

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
        cache what it saw after the refund's invalidation has passed.
        """
        if read_since is not None and entities:
            names = [CHANGED_PREFIX + e for e in entities]
            changed = [float(v) for v in await self._call("mget", names) if v is not None]
            if changed and max(changed) >= read_since:
                return False
        if not self.breaker.allow():
            raise CacheUnavailable("circuit open")
        try:
            async with self._redis.pipeline(transaction=False) as pipe:
                pipe.set(key, value, px=ttl)
                for entity in entities:
                    pipe.sadd(ENTITY_PREFIX + entity, key)
                    # Outlives every entry it points to, and then goes: bounded growth.
                    pipe.pexpire(ENTITY_PREFIX + entity, self._index_ttl)
                await pipe.execute()
        except (RedisError, OSError) as exc:
            self._failed(exc)
        self.breaker.record_success()
        return True

    async def delete(self, *keys: str) -> int:
        return int(await self._call("delete", *keys)) if keys else 0

    async def invalidate(self, entities: Collection[str]) -> list[str]:
        """Delete every entry indexed under any of `entities`; returns the keys deleted."""
        now = str(time.time())
        for entity in entities:
            await self._call("set", CHANGED_PREFIX + entity, now, px=self._index_ttl)
        keys: set[str] = set()
        for entity in entities:
            members = await self._call("smembers", ENTITY_PREFIX + entity)
            keys.update(m.decode() if isinstance(m, bytes) else m for m in members)
        if keys:
            await self._call("delete", *keys)
        await self.delete(*(ENTITY_PREFIX + e for e in entities))
        return sorted(keys)

    async def _call(self, command: str, *args: object, **kwargs: object) -> Any:
        if not self.breaker.allow():
            raise CacheUnavailable("circuit open")
        try:
            result = await getattr(self._redis, command)(*args, **kwargs)
        except (RedisError, OSError) as exc:
            self._failed(exc)
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
