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


async def announce(redis: aioredis.Redis, result: AgentResult) -> None:
    """One entry on the run's answer stream (a retried store leaves one: an exact
    `MAXLEN 1`). Redis not answering costs callers only the wait for the run's result."""
    key = answer_key(result.workflow_id, result.run_id)
    try:
        async with asyncio.timeout(ANNOUNCE_TIMEOUT_S):
            async with redis.pipeline(transaction=True) as pipe:  # (one key: fine on a cluster)
                pipe.xadd(
                    key, {ANSWER_FIELD: result.model_dump_json()}, maxlen=1, approximate=False
                )
                pipe.expire(key, ANSWER_TTL_S)
                await pipe.execute()
    except (*REDIS_ERRORS, TimeoutError) as exc:
        log.warning("answer_not_announced", key=key, error=str(exc) or type(exc).__name__)
