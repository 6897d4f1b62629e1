"""The `store` step: the run record in Postgres and the path entry in the cache."""

from __future__ import annotations

import asyncio
import json
from datetime import timedelta
from typing import Any

import asyncpg
import redis.asyncio as aioredis
import structlog
from temporalio import activity

from agentkeel.activities.answer_board import announce
from agentkeel.activities.cache.backend import CacheUnavailable
from agentkeel.activities.cache.path_cache import PathCache
from agentkeel.schemas import names
from agentkeel.schemas.result import AgentResult
from agentkeel.schemas.run_record import StoreInput, StoreResult

log = structlog.get_logger(__name__)

INSERT_RUN = """
INSERT INTO agent_runs (workflow_id, run_id, tenant, question, intent, tier, confidence,
                        cache_status, plan, steps, timings, answer, conversation_id,
                        route_reason, overridden_intent, actor_role, actor_subject,
                        actor_name, audience, request_id, approvals, confidence_basis,
                        prompt_tokens, completion_tokens, cost_usd, usage)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9::jsonb, $10::jsonb, $11::jsonb, $12, $13, $14, $15,
        $16, $17, $18, $19, $20, $21::jsonb, $22, $23, $24, $25, $26::jsonb)
ON CONFLICT (workflow_id, run_id) DO NOTHING
"""


class StoreActivities:
    def __init__(
        self, pool: asyncpg.Pool, cache: PathCache, redis: aioredis.Redis | None = None
    ) -> None:
        """`redis`: where a run's answer is announced once recorded (`schemas.answers`), ahead
        of the run's last workflow task; None announces nothing (callers wait for the
        run's result)."""
        self._pool = pool
        self._cache = cache
        self._redis = redis

    @activity.defn(name=names.STORE)
    async def store(self, request: StoreInput) -> StoreResult:
        result = request.result
        # The record and the cache entry are independent writes: made at once, the answer
        # is announced after the slower of them, not after both in turn.
        caching = asyncio.ensure_future(self._cache_entry(request))
        try:
            # ON CONFLICT makes a retried store a no-op: one record per run, never two.
            await self._pool.execute(
                INSERT_RUN,
                *run_record_row(request.tenant, request.question, result),
                request.conversation_id,
                result.route.reason,
                result.route.overridden_intent,
                request.actor.role,
                request.actor.subject,
                request.actor.name,
                request.actor.audience,
                request.request_id,
                json.dumps([a.model_dump(mode="json") for a in result.approvals]),
                result.route.basis.value if result.route.basis else None,
                *usage_columns(result),
            )
        except BaseException:
            caching.cancel()  # the retried store writes the entry again (an idempotent put)
            await asyncio.gather(caching, return_exceptions=True)
            raise
        ttl = await caching
        if request.announce and self._redis is not None:
            # After the record and the cache entry: a caller that returns on it may ask its
            # next turn (which reads this record) or the same question (this entry) at once.
            await announce(self._redis, result, also_run_id=request.first_run_id)
        ttl_s = int(ttl.total_seconds()) if ttl else None
        return StoreResult(recorded=True, cached=ttl is not None, cache_ttl_s=ttl_s)

    async def _cache_entry(self, request: StoreInput) -> timedelta | None:
        """The path entry, if the run asked for one: how long its answer is served; None
        where none was written (not asked, plan only or not cacheable, or the cache did
        not answer)."""
        if not request.use_cache:
            return None
        try:
            ttl = await self._cache.store(
                request.tenant,
                request.question,
                request.result,
                conversation_id=request.conversation_id,
                actor=request.actor,
            )
        except CacheUnavailable as exc:
            log.warning("cache_unavailable", error=str(exc), op="store")
            return None
        return ttl


NUL_SHOWN_AS = "\ufffd"
"""What a NUL byte in a recorded value reads as: Postgres text and jsonb cannot hold NUL,
and a step refused for one (`InvalidArguments`) still records the arguments it was given."""


def without_nul(value: Any) -> Any:
    """`value` (decoded JSON) with every NUL in its strings and keys replaced."""
    if isinstance(value, str):
        return value.replace("\x00", NUL_SHOWN_AS)
    if isinstance(value, list):
        return [without_nul(item) for item in value]
    if isinstance(value, dict):
        return {without_nul(key): without_nul(item) for key, item in value.items()}
    return value


def run_record_row(tenant: str, question: str, result: AgentResult) -> tuple[object, ...]:
    dump = without_nul(result.model_dump(mode="json"))
    return (
        result.workflow_id,
        result.run_id,
        tenant,
        question,
        result.route.intent,
        result.route.tier.value,
        result.route.measured_confidence,
        result.cache.value,
        json.dumps(dump["plan"]),
        json.dumps(dump["steps"]),
        json.dumps(dump["timings_ms"]),
        dump["answer"],
    )


def usage_columns(result: AgentResult) -> tuple[object, ...]:
    """`prompt_tokens`, `completion_tokens`, `cost_usd` and `usage` of the run record (NULL
    for a result that carries no usage)."""
    usage = result.usage
    if usage is None:
        return (None, None, None, None)
    return (
        usage.prompt_tokens,
        usage.completion_tokens,
        usage.cost_usd,
        json.dumps(usage.model_dump(mode="json")),
    )
