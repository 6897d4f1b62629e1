"""The client's readers built from settings: the exact tier in Redis, outputs in Postgres.

`AgentClient` knows them only as `client.fast_path`'s protocols; the cache's own classes
are assembled here, as the workers' caches are in `workers.cache_assembly`.

The exact tier is read under the version the workers publish
(`activities.cache.served_version`), not the client's own: a client needs neither the
domain's MCP servers nor a restart when the workers' catalog changes.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta

import asyncpg
import redis.asyncio as aioredis

from agentkeel.activities.cache.backend import CacheBackend, CacheUnavailable
from agentkeel.activities.cache.path_cache import PathCache
from agentkeel.activities.cache.served_version import ServedVersion
from agentkeel.activities.outputs import OutputStore
from agentkeel.schemas.request import AgentRequest
from agentkeel.schemas.result import AgentResult, StepOutcome
from agentkeel.settings.model import Settings


class ExactTier:
    """`client.fast_path.AnswerCache` over the path cache's exact tier."""

    def __init__(self, redis: aioredis.Redis, paths: PathCache, served: ServedVersion) -> None:
        self._redis = redis
        self._paths = paths
        self._served = served
        self._version = paths.version

    async def exact_answer(self, request: AgentRequest) -> AgentResult | None:
        served = await self._served.current(self._version)
        if served is None:
            return None  # withdrawn, or Redis cannot say: the run's own lookup decides
        if served != self._paths.version:  # kept until the workers' version moves again
            self._paths = self._paths.under(served)
        try:
            found = await self._paths.lookup(
                request.tenant,
                request.question,
                conversation_id=request.conversation_id,
                semantic=False,
                audience=request.actor.audience,
            )
        except CacheUnavailable:
            return None  # the workflow's own lookup will say so in the result
        return found.hit

    async def close(self) -> None:
        await self._redis.aclose()


class PostgresOutputs:
    """`client.fast_path.OutputReader`: one short connection per read."""

    def __init__(self, database_url: str) -> None:
        self._database_url = database_url

    async def resolved(self, steps: Sequence[StepOutcome]) -> list[StepOutcome]:
        connection = await asyncpg.connect(self._database_url)
        try:
            return await OutputStore(connection).resolved(steps)
        finally:
            await connection.close()


def exact_tier(
    settings: Settings, redis: aioredis.Redis, *, version: str, namespace: str
) -> ExactTier:
    plan_ttl = timedelta(seconds=settings.cache_ttl_s)
    paths = PathCache(CacheBackend(redis, index_ttl=plan_ttl), version=version, plan_ttl=plan_ttl)
    return ExactTier(redis, paths, ServedVersion(redis, settings.task_queue, namespace))


def output_reader(settings: Settings) -> PostgresOutputs | None:
    return None if settings.database_url is None else PostgresOutputs(settings.database_url)
