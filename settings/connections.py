"""Connections every agentkeel process opens the same way: Temporal, Postgres, Redis, HTTP.

Each client is built once per process with its own retries off: Temporal owns retries.
Nothing here imports LangGraph, policies or activities, so the client side can use it.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any, cast
from urllib.parse import urlsplit, urlunsplit

import asyncpg
import httpx
import redis as sync_redis
import redis.asyncio as aioredis
from redis.asyncio.cluster import RedisCluster
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.exceptions import RedisError
from temporalio.client import Client, Plugin
from temporalio.service import RPCError

from agentkeel.settings.model import Settings, StartupError

_announce: Callable[[Settings], None] | None = None


def announce_connections(callback: Callable[[Settings], None] | None) -> None:
    """Have `callback(settings)` told before each Temporal connection this process makes
    (the command line says then which Temporal it acts on, and why); None: stop."""
    global _announce
    _announce = callback


async def connect_temporal(settings: Settings, plugins: Sequence[Plugin]) -> Client:
    """A Temporal client, or a `StartupError` that says where Temporal was expected.

    TLS, an API key and gRPC metadata come from the Temporal client profile the settings
    were read with (`settings.temporal_profile`), as the Temporal CLI takes them."""
    from agentkeel.settings.tracing import tracing_plugins

    if _announce is not None:
        _announce(settings)

    try:
        return await Client.connect(
            **settings.temporal_connect_options(), plugins=[*plugins, *tracing_plugins()]
        )
    except (RuntimeError, RPCError) as exc:
        raise StartupError(
            f"cannot reach Temporal at {settings.temporal_described()} ({exc}); "
            "start the stack with `agentkeel up --detach`, or check the Temporal client "
            "profile (TEMPORAL_ADDRESS, TEMPORAL_API_KEY, TEMPORAL_TLS_*)"
        ) from None


# Redis must never add its timeout to a run: fail fast and let the cache miss.
REDIS_CONNECT_TIMEOUT_S = 0.25
REDIS_SOCKET_TIMEOUT_S = 0.5
REDIS_MAX_CONNECTIONS = 100
"""Connections one process opens to one Redis server (redis-py's own default)."""
REDIS_POOL_WAIT_S = REDIS_SOCKET_TIMEOUT_S
"""How long a call waits for a connection when all are in use: a burst of requests queues
for one rather than failing at once (redis-py's plain pool raises `Too many connections`,
which a gateway answered with a 500), and no longer than a reply may take, so Redis adds
no more to a run than before."""


def redis_client(url: str) -> aioredis.Redis:
    """A client of the Redis `url` names: a cluster client when that server is a node of a
    Redis Cluster (any node: the client learns the others from it), else a plain one.

    Typed as `Redis` for every user: `RedisCluster` takes the same commands, and the
    cluster's own errors are in `REDIS_ERRORS` beside a single server's.
    """
    options: dict[str, Any] = {
        "socket_connect_timeout": REDIS_CONNECT_TIMEOUT_S,
        "socket_timeout": REDIS_SOCKET_TIMEOUT_S,
        "retry": Retry(NoBackoff(), 0),  # Temporal and the cache's miss path own retries
        "health_check_interval": 10,
    }
    if is_cluster_node(url):
        return cast(aioredis.Redis, RedisCluster.from_url(url, **options))
    pool = aioredis.BlockingConnectionPool.from_url(
        url, max_connections=REDIS_MAX_CONNECTIONS, timeout=REDIS_POOL_WAIT_S, **options
    )
    return aioredis.Redis.from_pool(pool)


@functools.cache
def is_cluster_node(url: str) -> bool:
    """Whether the server at `url` has cluster mode on (`INFO cluster`), asked once per
    process and URL. Blocking, but once at start and bounded by the connect timeout; a
    server that does not answer then counts as a single one (its calls will miss)."""
    if not url.startswith(("redis://", "rediss://")):
        return False  # a unix socket is one server
    probe = sync_redis.Redis.from_url(
        url, socket_connect_timeout=REDIS_CONNECT_TIMEOUT_S, socket_timeout=REDIS_SOCKET_TIMEOUT_S
    )
    try:
        return bool(probe.info("cluster").get("cluster_enabled"))
    except (RedisError, OSError):
        return False
    finally:
        probe.close()


def http_client() -> httpx.AsyncClient:
    """One keep-alive pool for every outbound HTTP call of the process."""
    return httpx.AsyncClient(
        timeout=httpx.Timeout(5.0, connect=1.0),
        limits=httpx.Limits(max_connections=100, max_keepalive_connections=20),
        transport=httpx.AsyncHTTPTransport(retries=0),
    )


def redact(url: str) -> str:
    """The URL with any password replaced, for messages and logs."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@", 1)
    return urlunsplit(parts._replace(netloc=netloc))


# Postgres must fail a call in seconds, never hang it: a stalled or restarting server then
# costs an activity attempt (retried by Temporal), not a run stuck until its timeouts.
PG_CONNECT_TIMEOUT_S = 5.0
PG_COMMAND_TIMEOUT_S = 10.0
PG_ACQUIRE_TIMEOUT_S = 5.0
PG_IDLE_LIFETIME_S = 60.0


class BoundedPool(asyncpg.Pool):
    """An asyncpg pool whose `acquire()` gives up after `PG_ACQUIRE_TIMEOUT_S` by default
    (asyncpg waits forever), also for the pool's own `fetch`/`execute`."""

    def acquire(self, *, timeout: float | None = None) -> Any:
        return super().acquire(timeout=PG_ACQUIRE_TIMEOUT_S if timeout is None else timeout)


async def postgres_pool(dsn: str, *, max_size: int, min_size: int = 1) -> asyncpg.Pool:
    """A pool with connect, command and acquire timeouts; connections that a restarted
    server dropped are replaced on their next use (asyncpg discards broken ones)."""
    pool = BoundedPool(
        dsn,
        min_size=min_size,
        max_size=max_size,
        max_queries=50_000,
        max_inactive_connection_lifetime=PG_IDLE_LIFETIME_S,
        loop=None,
        connection_class=asyncpg.Connection,
        record_class=asyncpg.Record,
        timeout=PG_CONNECT_TIMEOUT_S,
        command_timeout=PG_COMMAND_TIMEOUT_S,
    )
    return await pool
