"""The exact-match path cache: a whole finished run, keyed by normalized question + tenant.

Redis is an accelerator, never a dependency for correctness: every Redis
failure turns into a miss (with a warning) and the run goes on.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from datetime import timedelta

import redis.asyncio as aioredis
import structlog
from pydantic import ValidationError
from redis.exceptions import RedisError
from temporalio import activity

from schemas.agent import LookupCacheInput, LookupCacheResult
from schemas.result import AgentResult, StepStatus
from schemas.tools import TOOLS

log = structlog.get_logger(__name__)

KEY_PREFIX = "agentkeel:path:v1"
_SPACE = re.compile(r"\s+")
_TRAILING = re.compile(r"[\s?!.]+$")


def normalize_question(question: str) -> str:
    """Case, width, spacing and trailing punctuation do not change what is asked."""
    text = unicodedata.normalize("NFKC", question).casefold()
    return _TRAILING.sub("", _SPACE.sub(" ", text).strip())


def path_key(tenant: str, question: str) -> str:
    digest = hashlib.sha256(normalize_question(question).encode()).hexdigest()[:32]
    return f"{KEY_PREFIX}:{tenant}:{digest}"


def cacheable_ttl(result: AgentResult, default_ttl: timedelta) -> timedelta | None:
    """How long this result may be served again, or None if it must not be cached.

    Only clean runs of idempotent tools qualify; the entry lives no longer than
    the shortest TTL of the tools whose results it contains.
    """
    if result.plan_error is not None or not result.steps:
        return None
    ttl = default_ttl
    for step in result.steps:
        spec = TOOLS.get(step.tool)
        if step.status != StepStatus.SUCCEEDED or spec is None or not spec.idempotent:
            return None
        if spec.cache_ttl is None:
            return None
        ttl = min(ttl, spec.cache_ttl)
    return ttl


class PathCache:
    def __init__(self, client: aioredis.Redis, *, default_ttl: timedelta) -> None:
        self._redis = client
        self.default_ttl = default_ttl

    async def get(self, tenant: str, question: str) -> AgentResult | None:
        key = path_key(tenant, question)
        raw = await self._redis.get(key)
        if raw is None:
            return None
        try:
            return AgentResult.model_validate_json(raw)
        except ValidationError:
            # Written by an older release whose result shape no longer validates: a miss,
            # and the entry goes so the next run stores a current one.
            log.warning("cache_entry_unreadable", key=key)
            await self._redis.delete(key)
            return None

    async def put(self, tenant: str, question: str, result: AgentResult) -> timedelta | None:
        ttl = cacheable_ttl(result, self.default_ttl)
        if ttl is None:
            return None
        await self._redis.set(path_key(tenant, question), result.model_dump_json(), px=ttl)
        return ttl


class CacheActivities:
    def __init__(self, cache: PathCache) -> None:
        self._cache = cache

    @activity.defn(name="lookup_cache")
    async def lookup_cache(self, request: LookupCacheInput) -> LookupCacheResult:
        try:
            hit = await self._cache.get(request.tenant, request.question)
        except (RedisError, OSError) as exc:
            log.warning("cache_unavailable", error=str(exc), op="lookup")
            return LookupCacheResult(hit=None, available=False)
        return LookupCacheResult(hit=hit)
