"""What a Redis call may raise, from a single server or a cluster: each counts as Redis not
answering (a cache miss, a lease taken without Redis), never as a failed run.

A cluster client raises `RedisClusterException` (no `RedisError`) when a slot is not covered
or keys of one command hash to different slots; a single server raises `ResponseError`
(a `RedisError`) for a `MOVED` it cannot follow.
"""

from __future__ import annotations

from redis.exceptions import RedisClusterException, RedisError

REDIS_ERRORS: tuple[type[RedisError], type[RedisClusterException], type[OSError]] = (
    RedisError,
    RedisClusterException,
    OSError,
)
