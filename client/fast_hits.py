"""Answers the client fast path gave, counted so that `agentkeel stats` sees them.

A fast-path hit (`AgentClient` reading the exact tier straight from Redis) starts no run,
so it leaves no run record; without a count of its own, `stats` would say "cache hit ratio
0%" after a dozen of them. Each hit adds one to its tenant's field of a per-minute hash in
Redis, kept `KEEP_S`; `stats` sums the minutes of its window. Counting never fails an
answer: a Redis error is dropped (the answer was already read).
"""

from __future__ import annotations

import time

import redis.asyncio as aioredis
import structlog

from agentkeel.client.served_version import REDIS_ERRORS

__all__ = ["KEEP_S", "count_fast_hit", "fast_hits", "fast_hits_key"]

log = structlog.get_logger(__name__)

KEEP_S = 8 * 86400
"""How long a minute's count is kept: `stats --since` over more than that counts the last
eight days of fast-path hits only."""


def fast_hits_key(namespace: str, task_queue: str, minute: int) -> str:
    """The hash of one minute (epoch seconds // 60): tenant -> hits."""
    return f"agentkeel:fast_path_hits:{{{namespace}:{task_queue}}}:{minute}"


async def count_fast_hit(
    redis: aioredis.Redis, *, namespace: str, task_queue: str, tenant: str
) -> None:
    key = fast_hits_key(namespace, task_queue, int(time.time() // 60))
    try:
        pipe = redis.pipeline(transaction=False)
        pipe.hincrby(key, tenant, 1)
        pipe.expire(key, KEEP_S)
        await pipe.execute()
    except REDIS_ERRORS as exc:
        log.debug("fast_hit_not_counted", error=repr(exc))


async def fast_hits(
    redis: aioredis.Redis,
    *,
    namespace: str,
    task_queue: str,
    since_s: float,
    tenant: str | None,
    now: float | None = None,
) -> int:
    """Fast-path hits in the last `since_s` (whole minutes: the first one counts whole),
    of `tenant` or of all tenants."""
    now = time.time() if now is None else now
    first = int((now - min(since_s, KEEP_S)) // 60)
    keys = [fast_hits_key(namespace, task_queue, m) for m in range(first, int(now // 60) + 1)]
    pipe = redis.pipeline(transaction=False)
    for key in keys:
        if tenant is None:
            pipe.hvals(key)
        else:
            pipe.hget(key, tenant)
    total = 0
    for value in await pipe.execute():
        values = value if isinstance(value, list) else [value]
        total += sum(int(v) for v in values if v is not None)
    return total
