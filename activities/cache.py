"""The path cache: a whole finished run, found by exact key or by a guarded semantic match.

What a hit serves depends on freshness. While every tool result on the cached path
is within its TTL, the cached answer (`exact` / `semantic`). After that, until the
plan TTL, the cached *plan*: route and planning are skipped and the tools run fresh
(`plan`). Paths with a side effect or a failure are never cached. The key carries a
version of the tool catalog and the policy, so a deploy that changes behaviour
starts from an empty cache instead of serving stale paths.
"""

from __future__ import annotations

import hashlib
import re
import time
import unicodedata
from datetime import timedelta
from typing import Protocol

import structlog
from pydantic import BaseModel, ValidationError

from activities.cache_backend import CacheBackend
from activities.entities import entities_in
from schemas.agent import LookupCacheResult
from schemas.result import AgentResult, CacheStatus, StepStatus
from schemas.tools import TOOLS, catalog_version

log = structlog.get_logger(__name__)

KEY_PREFIX = "agentkeel:path:v2"
CLOCK_SKEW_MARGIN_S = 2.0
_SPACE = re.compile(r"\s+")
_TRAILING = re.compile(r"[\s?!.]+$")


def normalize_question(question: str) -> str:
    """Case, width, spacing and trailing punctuation do not change what is asked."""
    text = unicodedata.normalize("NFKC", question).casefold()
    return _TRAILING.sub("", _SPACE.sub(" ", text).strip())


def cache_version(policy_version: str) -> str:
    return f"{catalog_version()}.{policy_version}"


def path_key(tenant: str, question: str, version: str) -> str:
    digest = hashlib.sha256(normalize_question(question).encode()).hexdigest()[:32]
    return f"{KEY_PREFIX}:{version}:{tenant}:{digest}"


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
    """Only clean runs of idempotent tools: replaying a refund's plan would refund again."""
    return (
        result.plan_error is None
        and bool(result.steps)
        and all(
            s.status == StepStatus.SUCCEEDED and s.tool in TOOLS and TOOLS[s.tool].idempotent
            for s in result.steps
        )
    )


class PathEntry(BaseModel):
    question: str
    result: AgentResult
    answer_fresh_until: float | None = None
    """Epoch seconds until which the answer may be served; after it, only the plan."""


class SemanticMatch(Protocol):
    @property
    def path_key(self) -> str: ...

    @property
    def score(self) -> float: ...

    @property
    def matched_question(self) -> str: ...


class SemanticTier(Protocol):
    async def lookup(self, tenant: str, question: str) -> SemanticMatch | None: ...

    async def remember(self, tenant: str, question: str, path_key: str) -> None: ...

    async def forget(self, path_keys: list[str]) -> int: ...


class PathCache:
    def __init__(
        self,
        backend: CacheBackend,
        *,
        version: str,
        plan_ttl: timedelta,
        semantic: SemanticTier | None = None,
    ) -> None:
        self._backend = backend
        self.version = version
        self.plan_ttl = plan_ttl
        self._semantic = semantic

    def key(self, tenant: str, question: str) -> str:
        return path_key(tenant, question, self.version)

    async def lookup(
        self, tenant: str, question: str, *, semantic: bool = True
    ) -> LookupCacheResult:
        """Raises `CacheUnavailable` when Redis cannot answer."""
        key = self.key(tenant, question)
        entry = await self._entry(key)
        status, similarity, matched = CacheStatus.EXACT, None, None
        if entry is None and semantic and self._semantic is not None:
            match = await self._semantic.lookup(tenant, question)
            if match is not None:
                entry = await self._entry(match.path_key)
                status, similarity = CacheStatus.SEMANTIC, match.score
                matched = match.matched_question
                if entry is None:  # expired or invalidated: the index entry goes too
                    await self._semantic.forget([match.path_key])
        if entry is None:
            return LookupCacheResult(status=CacheStatus.MISS)
        fresh = entry.answer_fresh_until is not None and time.time() < entry.answer_fresh_until
        if fresh:
            return LookupCacheResult(
                status=status, hit=entry.result, similarity=similarity, matched_question=matched
            )
        return LookupCacheResult(
            status=CacheStatus.PLAN,
            plan=entry.result.plan,
            route=entry.result.route,
            similarity=similarity,
            matched_question=matched or entry.question,
        )

    async def ttl_left_ms(self, tenant: str, question: str) -> int:
        """Milliseconds before the exact entry expires; negative when there is none."""
        return await self._backend.pttl_ms(self.key(tenant, question))

    async def store(self, tenant: str, question: str, result: AgentResult) -> timedelta | None:
        """Cache the run if it may be; returns how long its answer is served (None: plan only
        or not cached). Raises `CacheUnavailable`."""
        if not cacheable(result):
            return None
        fresh_for = answer_ttl(result, self.plan_ttl)
        entry = PathEntry(
            question=question,
            result=result,
            answer_fresh_until=time.time() + fresh_for.total_seconds() if fresh_for else None,
        )
        touched = entities_in([s.args for s in result.steps], [s.output for s in result.steps])
        key = self.key(tenant, question)
        first_read = min(s.started_at for s in result.steps if s.started_at is not None)
        stored = await self._backend.put(
            key,
            entry.model_dump_json(),
            self.plan_ttl,
            touched,
            # Workflow time vs this host's clock: a margin covers their skew.
            read_since=first_read.timestamp() - CLOCK_SKEW_MARGIN_S,
        )
        if not stored:
            log.info("path_not_cached_entity_changed", key=key)
            return None
        if self._semantic is not None:
            await self._semantic.remember(tenant, question, key)
        return fresh_for

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
