"""The caller's side of an announced answer (`schemas.answers`): the first of the answer's
announcement and the run's own result."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable
from typing import Any

import redis.asyncio as aioredis
from pydantic import ValidationError
from redis.exceptions import RedisClusterException, RedisError

from agentkeel.client.token_follow import DEFAULT_BLOCK_MS, below_socket_timeout
from agentkeel.schemas.answers import ANSWER_FIELD, answer_key
from agentkeel.schemas.result import AgentResult

ANSWER_WINDOW_S = 30.0
"""How long a caller also watches for the announcement; a longer run (one waiting for an
approval) is followed through its result alone, with no Redis reads while it waits."""


async def announced_answer(
    redis: aioredis.Redis,
    workflow_id: str,
    run_id: str,
    *,
    window_s: float = ANSWER_WINDOW_S,
    block_ms: int = DEFAULT_BLOCK_MS,
) -> AgentResult | None:
    """The run's announced answer; None when none came within `window_s`, Redis did not
    answer, or the entry is not an `AgentResult` (the run's result then decides)."""
    key = answer_key(workflow_id, run_id)
    block = below_socket_timeout(redis, block_ms)
    ends = time.monotonic() + window_s
    while time.monotonic() < ends:
        try:
            streams: Any = await redis.xread({key: "0"}, count=1, block=block)
        except (RedisError, RedisClusterException, OSError):
            return None
        for _key, entries in streams or []:
            for _id, fields in entries:
                return _parsed(fields)
    return None


def _parsed(fields: dict[Any, Any]) -> AgentResult | None:
    raw = fields.get(ANSWER_FIELD.encode(), fields.get(ANSWER_FIELD))
    try:
        return AgentResult.model_validate_json(raw) if raw is not None else None
    except (ValidationError, TypeError):
        return None


async def first_answer(
    result: Awaitable[AgentResult], redis: aioredis.Redis | None, workflow_id: str, run_id: str
) -> AgentResult:
    """The run's answer from whichever says it first: the announcement or `result` (whose
    failure is the caller's, as before). Without Redis or a run id: `result` alone."""
    final = asyncio.ensure_future(result)
    if redis is None or not run_id:
        return await final
    early = asyncio.ensure_future(announced_answer(redis, workflow_id, run_id))
    try:
        await asyncio.wait({final, early}, return_when=asyncio.FIRST_COMPLETED)
        announced = None if final.done() or early.exception() else early.result()
        return announced if announced is not None else await final
    finally:
        _drop(early)
        final.cancel()  # (a no-op once it is done; the announcement made it moot)


def _drop(task: asyncio.Future[Any]) -> None:
    """Stop the watch without waiting for it: a cancel inside a blocking XREAD can be
    swallowed by redis-py, and the read then ends within its block time, unawaited."""
    task.cancel()
    task.add_done_callback(lambda done: done.cancelled() or done.exception())
