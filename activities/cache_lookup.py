"""The `lookup_cache` activity (a local activity of the CPU worker)."""

from __future__ import annotations

import structlog
from temporalio import activity

from activities.cache.backend import CacheUnavailable
from activities.cache.path_cache import PathCache
from schemas import names
from schemas.cache_lookup import LookupCacheInput, LookupCacheResult

log = structlog.get_logger(__name__)


class CacheActivities:
    def __init__(self, cache: PathCache) -> None:
        self._cache = cache

    @activity.defn(name=names.LOOKUP_CACHE)
    async def lookup_cache(self, request: LookupCacheInput) -> LookupCacheResult:
        try:
            return await self._cache.lookup(
                request.tenant,
                request.question,
                conversation_id=request.conversation_id,
                semantic=request.semantic,
                audience=request.audience,
            )
        except CacheUnavailable as exc:
            log.warning("cache_unavailable", error=str(exc), op="lookup")
            return LookupCacheResult(available=False)
