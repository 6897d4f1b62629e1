"""Announcing a run's recorded answer before the run closes (contract: `schemas.answers`)."""

from __future__ import annotations

import asyncio

import redis.asyncio as aioredis
import structlog

from agentkeel.activities.redis_errors import REDIS_ERRORS
from agentkeel.schemas.answers import ANSWER_FIELD, ANSWER_TTL_S, answer_key
from agentkeel.schemas.result import AgentResult

log = structlog.get_logger(__name__)


ANNOUNCE_TIMEOUT_S = 0.25
"""At most this long on the store's path: a hung Redis costs callers only the wait for the
run's own result, not every run record a half-second socket timeout."""


async def announce(
    redis: aioredis.Redis, result: AgentResult, *, also_run_id: str | None = None
) -> None:
    """One entry on the run's answer stream (a retried store leaves one: an exact
    `MAXLEN 1`), and on `also_run_id`'s (the first run of a chain this run continues, whose
    key the caller who started the chain watches). Redis not answering costs callers only
    the wait for the run's result."""
    # The key the chain's caller watches first; one key a transaction (fine on a cluster).
    run_ids = [*([also_run_id] if also_run_id else []), result.run_id]
    for run_id in run_ids:
        key = answer_key(result.workflow_id, run_id)
        try:
            async with asyncio.timeout(ANNOUNCE_TIMEOUT_S):
                await _announce_on(redis, key, result)
        except (*REDIS_ERRORS, TimeoutError) as exc:
            log.warning("answer_not_announced", key=key, error=str(exc) or type(exc).__name__)
            return  # Redis is not answering: the next key would wait as long for nothing


async def _announce_on(redis: aioredis.Redis, key: str, result: AgentResult) -> None:
    async with redis.pipeline(transaction=True) as pipe:
        pipe.xadd(key, {ANSWER_FIELD: result.model_dump_json()}, maxlen=1, approximate=False)
        pipe.expire(key, ANSWER_TTL_S)
        await pipe.execute()
