"""Leases in Redis: the slots of the gateway's quotas, shared by every replica (and by the
CPU workers, which take a watch's slot when a run starts watching: `watch_slots`).

A quota is a sorted set per scope (one key, one tenant); each member is one thing held (a
run's workflow id, a stream's id), scored by when its lease expires. Taking a slot checks
every scope it counts against and adds it to all of them in one Lua script, so two
replicas never both take the last slot. A lease that is not renewed expires on its own:
a crashed gateway cannot keep a slot forever.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

import redis.asyncio as aioredis

_TAKE = """
local now, expiry, member = tonumber(ARGV[1]), tonumber(ARGV[2]), ARGV[3]
for i, key in ipairs(KEYS) do
  redis.call('ZREMRANGEBYSCORE', key, '-inf', now)
  local limit = tonumber(ARGV[3 + i])
  if limit > 0 and not redis.call('ZSCORE', key, member)
      and redis.call('ZCARD', key) >= limit then
    return {i}
  end
end
local held = {0}
for _, key in ipairs(KEYS) do
  redis.call('ZADD', key, expiry, member)
  if redis.call('PTTL', key) < expiry - now then
    redis.call('PEXPIRE', key, expiry - now)
  end
  held[#held + 1] = redis.call('ZCARD', key)
end
return held
"""
"""KEYS: the scopes' sets; ARGV: now and expiry (ms), the member, each scope's limit (0: no
limit). {0, then each scope's count with the member} when taken (or already held:
renewed), else {the 1-based index of a full scope}. The set itself expires with its last
lease, so idle scopes leave nothing behind (every lease of a set has the same length, so
renewing one sets the set's own expiry to it)."""


@dataclass(frozen=True)
class Slot:
    """One scope a lease counts against."""

    key: str
    limit: int


class Leases:
    def __init__(self, redis: aioredis.Redis) -> None:
        self.redis = redis
        self._take = redis.register_script(_TAKE)

    async def take(self, slots: Sequence[Slot], member: str, ttl_s: float) -> Slot | None:
        """Hold `member` in every slot's scope for `ttl_s`; None when held, else the first
        scope that is full (nothing is taken then)."""
        full, _ = await self.take_counted(slots, member, ttl_s)
        return full

    async def take_counted(
        self, slots: Sequence[Slot], member: str, ttl_s: float
    ) -> tuple[Slot | None, list[int]]:
        """`take`, with each scope's count once `member` is in it (taken in the same
        script, so of starts at once each sees those taken before it: its place)."""
        now = _now_ms()
        args: list[str | int] = [now, now + int(ttl_s * 1000), member]
        args += [slot.limit for slot in slots]
        full, *held = (int(n) for n in await self._take(keys=[s.key for s in slots], args=args))
        return (None if full == 0 else slots[full - 1]), held

    async def renew(self, keys: Sequence[str], member: str, ttl_s: float) -> None:
        """Extend `member`'s lease where it is still held (an expired one is not revived)."""
        expiry = _now_ms() + int(ttl_s * 1000)
        async with self.redis.pipeline(transaction=True) as pipe:
            for key in keys:
                pipe.zadd(key, {member: expiry}, xx=True)
                pipe.pexpire(key, int(ttl_s * 1000))
            await pipe.execute()

    async def rename(self, keys: Sequence[str], old: str, new: str, ttl_s: float) -> None:
        """Hold `new` instead of `old` (a reservation becomes the run it started); a `new`
        already held (a shared run) is held once."""
        expiry = _now_ms() + int(ttl_s * 1000)
        async with self.redis.pipeline(transaction=True) as pipe:
            for key in keys:
                pipe.zrem(key, old)
                pipe.zadd(key, {new: expiry})
                pipe.pexpire(key, int(ttl_s * 1000))
            await pipe.execute()

    async def release(self, keys: Sequence[str], member: str) -> None:
        async with self.redis.pipeline(transaction=True) as pipe:
            for key in keys:
                pipe.zrem(key, member)
            await pipe.execute()

    async def held(self, key: str) -> list[str]:
        """The members of `key` whose lease has not expired."""
        members = await self.redis.zrangebyscore(key, _now_ms(), "+inf")
        return [m.decode() if isinstance(m, bytes) else str(m) for m in members]

    async def count(self, key: str) -> int:
        """How many members of `key` hold a lease that has not expired."""
        return int(await self.redis.zcount(key, _now_ms(), "+inf"))

    async def scopes(self, pattern: str) -> list[str]:
        """The sets whose names match `pattern` (a glob)."""
        found = [k async for k in self.redis.scan_iter(match=pattern, count=1000)]
        return [k.decode() if isinstance(k, bytes) else str(k) for k in found]


def _now_ms() -> int:
    return int(time.time() * 1000)


def quota_prefix(deployment: str) -> str:
    """Where one deployment's quotas live (its task queue: deployments sharing one Redis
    count apart). One hash tag, so a run's key and tenant scopes are taken in one script,
    which on a Redis Cluster must name keys of one slot."""
    return f"agentkeel:gateway:{{{deployment}}}:"


def quota_limits_key(deployment: str) -> str:
    """The hash where the gateway publishes its limits, for the workers that count with it:
    `<kind>:<scope>` -> limit (0: none), and `lease_s`."""
    return f"{quota_prefix(deployment)}limits"


def scope_key(prefix: str, kind: str, scope: str, who: str) -> str:
    """The set of one quota's scope: `<prefix><kind>:<scope>:<who>` (`runs:key:<key id>`)."""
    return f"{prefix}{kind}:{scope}:{who}"


def limit_field(kind: str, scope: str) -> str:
    """The field of `quota_limits_key`'s hash holding the limit of one quota's scope."""
    return f"{kind}:{scope}"
