"""The `lookup_cache` activity (a local activity of the CPU worker)."""

from __future__ import annotations

import structlog
from temporalio import activity

from agentkeel.activities.cache.backend import CacheUnavailable
from agentkeel.activities.cache.path_cache import PathCache
from agentkeel.activities.local_policy import LocalPolicyActivities
from agentkeel.activities.predictions import predicted_reads
from agentkeel.activities.span_notes import note
from agentkeel.schemas import metrics, names
from agentkeel.schemas.cache_lookup import LookupCacheInput, LookupCacheResult
from agentkeel.schemas.result import CacheStatus

log = structlog.get_logger(__name__)


class CacheActivities:
    def __init__(
        self,
        cache: PathCache,
        *,
        speculate_calls: int = 0,
        offers: LocalPolicyActivities | None = None,
    ) -> None:
        """`speculate_calls`: most reads a miss predicts for the run to start at once
        (`AGENTKEEL_SPECULATION_MAX_CALLS`; 0: none). `offers`: this worker's local policy
        steps, which every lookup describes (the run then asks none to find out)."""
        self._cache = cache
        self._speculate_calls = speculate_calls
        self._offers = offers

    @activity.defn(name=names.LOOKUP_CACHE)
    async def lookup_cache(self, request: LookupCacheInput) -> LookupCacheResult:
        try:
            found = await self._cache.lookup(
                request.tenant,
                request.question,
                conversation_id=request.conversation_id,
                semantic=request.semantic,
                audience=request.audience,
            )
        except CacheUnavailable as exc:
            log.warning("cache_unavailable", error=str(exc), op="lookup")
            found = LookupCacheResult(available=False)
        if found.status == CacheStatus.MISS:
            found.speculate = predicted_reads(request.question, limit=self._speculate_calls)
        if self._offers is not None:
            found.policy_here = self._offers.serves_steps
            found.tools_here = self._offers.tools_here
        _count(found)
        note(
            cache_status=found.status.value,
            cache_hit=found.status != CacheStatus.MISS,
            cache_similarity=found.similarity,
            cache_available=found.available,
        )
        return found


def _count(found: LookupCacheResult) -> None:
    lookups = activity.metric_meter().create_counter(
        metrics.CACHE_LOOKUPS, "Path-cache lookups, by tier and outcome"
    )
    if not found.available:
        lookups.add(1, {"tier": "all", "outcome": "unavailable"})
    elif found.status == CacheStatus.MISS:
        lookups.add(1, {"tier": "all", "outcome": "miss"})
    else:
        lookups.add(1, {"tier": found.status.value, "outcome": "hit"})
