"""The path cache: a whole finished run, found by exact key or by a guarded semantic match.

What a hit serves depends on freshness. While every tool result on the cached path
is within its TTL, the cached answer (`exact` / `semantic`). After that, until the
plan TTL, the cached *plan*: route and planning are skipped and the tools run fresh
(`plan`). Paths with a side effect or a failure are never cached. The key carries a
version of the tool catalog and the policy, so a deploy that changes behaviour
starts from an empty cache instead of serving stale paths.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from datetime import timedelta

import structlog
from pydantic import BaseModel, ValidationError

from agentkeel.activities.cache.backend import CLOCK_SKEW_MARGIN_S, CacheBackend
from agentkeel.activities.cache.entities import entities_in
from agentkeel.activities.cache.tiers import ExactTier, PathTier, TierMatch, TierQuery
from agentkeel.activities.cache.tool_results import tool_key
from agentkeel.schemas.actor import SYSTEM_ACTOR, Actor
from agentkeel.schemas.cache_lookup import LookupCacheResult
from agentkeel.schemas.path_cache import PathEntry, path_key
from agentkeel.schemas.plan.model import PlanStep
from agentkeel.schemas.result import AgentResult, CacheStatus, StepOutcome, StepStatus
from agentkeel.schemas.tools import TOOLS, catalog_version

log = structlog.get_logger(__name__)


def cache_version(policy_version: str) -> str:
    return f"{catalog_version()}.{policy_version}"


def _call_inputs(step: StepOutcome, actor: Actor, tenant: str) -> list[BaseModel]:
    """The inputs the tool activity received (arguments, actor, tenant): the tool cache's
    keys."""
    spec = TOOLS[step.tool]
    if step.status is not StepStatus.SUCCEEDED:
        return []  # passed over by a condition: it read nothing
    calls = step.args if isinstance(step.args, list) else [step.args]
    given = {"actor": actor, "tenant": tenant}
    return [spec.activity_input_model.model_validate({**args, **given}) for args in calls]


def answer_ttl(result: AgentResult, plan_ttl: timedelta) -> timedelta | None:
    """How long the answer itself stays true: the shortest TTL of the tools it used."""
    ttl = plan_ttl
    for step in result.steps:
        spec = TOOLS.get(step.tool)
        if spec is None or spec.cache_ttl is None:
            return None
        ttl = min(ttl, spec.cache_ttl)
    return ttl


def cacheable(result: AgentResult) -> bool:
    """Only clean runs of idempotent tools: replaying a refund's plan would refund again.
    Nor a plan that waits or watches: its answer is about a later moment than the next
    asker's."""
    return (
        result.plan_error is None
        and bool(result.steps)
        and not any(s.repeat is not None or TOOLS[s.tool].runs_in_workflow for s in _known(result))
        and all(s.as_planned and s.tool in TOOLS and TOOLS[s.tool].idempotent for s in result.steps)
    )


def _known(result: AgentResult) -> list[PlanStep]:
    return [s for s in result.plan.steps if s.tool in TOOLS]


class PathCache:
    """Whole runs by question: found through `tiers` in order, stored under the exact key.

    Args:
        backend: Redis, with the entity index that invalidation uses.
        version: tool catalog + policy digest; part of every key and tier scope.
        plan_ttl: how long a stored plan may be reused.
        tiers: asked in order on lookup; every one remembers each stored path. Default:
            the exact tier alone.
    """

    def __init__(
        self,
        backend: CacheBackend,
        *,
        version: str,
        plan_ttl: timedelta,
        tiers: Sequence[PathTier] = (),
    ) -> None:
        self._backend = backend
        self.version = version
        self.plan_ttl = plan_ttl
        self.tiers: tuple[PathTier, ...] = tuple(tiers) or (ExactTier(),)

    def under(self, version: str) -> PathCache:
        """This cache as it reads and writes under another version (a client reading the
        paths of the version the workers serve)."""
        return PathCache(self._backend, version=version, plan_ttl=self.plan_ttl, tiers=self.tiers)

    def key(
        self,
        tenant: str,
        question: str,
        conversation_id: str | None = None,
        audience: str = SYSTEM_ACTOR.audience,
    ) -> str:
        return path_key(tenant, question, self.version, conversation_id, audience)

    def _query(
        self, tenant: str, question: str, conversation_id: str | None, audience: str
    ) -> TierQuery:
        return TierQuery(
            tenant=tenant,
            question=question,
            conversation_id=conversation_id,
            key=self.key(tenant, question, conversation_id, audience),
            # A tier's own index is namespaced like the keys: tenant, version, audience.
            scope=f"{tenant}@{self.version}@{audience}",
        )

    async def lookup(
        self,
        tenant: str,
        question: str,
        *,
        conversation_id: str | None = None,
        semantic: bool = True,
        audience: str = SYSTEM_ACTOR.audience,
    ) -> LookupCacheResult:
        """The first tier's match; `semantic=False` asks only the quick tiers.

        Raises `CacheUnavailable` when Redis cannot answer."""
        query = self._query(tenant, question, conversation_id, audience)
        match: TierMatch | None = None
        for tier in self.tiers:
            if semantic or tier.quick:
                match = await tier.find(query, self._entry)
                if match is not None:
                    break
        if match is None:
            return LookupCacheResult(status=CacheStatus.MISS)
        entry = match.entry
        if entry.answer_fresh_until is not None and time.time() < entry.answer_fresh_until:
            return LookupCacheResult(
                status=match.status,
                hit=entry.result,
                similarity=match.similarity,
                matched_question=match.matched_question,
            )
        return LookupCacheResult(
            status=CacheStatus.PLAN,
            plan=entry.result.plan,
            route=entry.result.route,
            similarity=match.similarity,
            matched_question=match.matched_question or entry.question,
        )

    async def answer_fresh_for_s(self, tenant: str, question: str) -> float:
        """Seconds the exact entry's answer stays servable; negative when it is not."""
        entry = await self._entry(self.key(tenant, question))
        if entry is None or entry.answer_fresh_until is None:
            return -1.0
        return entry.answer_fresh_until - time.time()

    async def store(
        self,
        tenant: str,
        question: str,
        result: AgentResult,
        *,
        conversation_id: str | None = None,
        actor: Actor = SYSTEM_ACTOR,
    ) -> timedelta | None:
        """Cache the run if it may be; returns how long its answer is served (None: plan only
        or not cached). Raises `CacheUnavailable`."""
        if not cacheable(result):
            return None
        fresh_until = await self._answer_fresh_until(result, actor, tenant)
        entry = PathEntry(question=question, result=result, answer_fresh_until=fresh_until)
        touched = entities_in([s.args for s in result.steps], [s.output for s in result.steps])
        query = self._query(tenant, question, conversation_id, actor.audience)
        key = query.key
        first_read = min(s.started_at for s in result.steps if s.started_at is not None)
        stored = await self._backend.put(
            key,
            entry.model_dump_json(),
            self.plan_ttl,
            touched,
            tenant=tenant,
            # Workflow time vs this host's clock: a margin covers their skew.
            read_since=first_read.timestamp() - CLOCK_SKEW_MARGIN_S,
        )
        if not stored:
            log.info("path_not_cached_entity_changed", key=key)
            return None
        for tier in self.tiers:
            await tier.remember(query)
        return timedelta(seconds=fresh_until - time.time()) if fresh_until else None

    async def _answer_fresh_until(
        self, result: AgentResult, actor: Actor, tenant: str
    ) -> float | None:
        """When the first tool result on the path goes stale. A result the tool cache served
        may already be old, so its own freshness counts, not the time of this run."""
        ttl = answer_ttl(result, self.plan_ttl)
        if ttl is None:
            return None
        until = time.time() + ttl.total_seconds()
        keys = [
            tool_key(TOOLS[s.tool], args)
            for s in result.steps
            for args in _call_inputs(s, actor, tenant)
        ]
        for raw in await self._backend.mget(keys) if keys else []:
            if raw is not None:
                until = min(until, float(json.loads(raw)["fresh_until"]))
        return until if until > time.time() else None

    async def _entry(self, key: str) -> PathEntry | None:
        raw = await self._backend.get(key)
        if raw is None:
            return None
        try:
            return PathEntry.model_validate_json(raw)
        except ValidationError:
            # Written by a release whose result shape no longer validates: a miss, and the
            # entry goes so the next run stores a current one.
            log.warning("cache_entry_unreadable", key=key)
            await self._backend.delete(key)
            return None
