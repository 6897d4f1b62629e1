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

ANSWER_WINDOW_S = 15.0
"""How long a caller also watches for the announcement (one blocking read at a time); a
longer run (one waiting for an approval) is followed through its result alone."""


class AnswerWatch:
    """Reads one run's answer stream until the answer, the window's end, or `stop()`."""

    def __init__(
        self,
        redis: aioredis.Redis,
        workflow_id: str,
        run_id: str,
        *,
        window_s: float = ANSWER_WINDOW_S,
        block_ms: int = DEFAULT_BLOCK_MS,
    ) -> None:
        self._redis = redis
        self._key = answer_key(workflow_id, run_id)
        self._window_s = window_s
        self._block = below_socket_timeout(redis, block_ms)
        self.stopped = False
        self.reads = 0

    def stop(self) -> None:
        """End the watch at its next step, even one whose cancellation redis-py swallowed
        inside a blocking XREAD (it then returns after that read, reading no more)."""
        self.stopped = True

    async def answer(self) -> AgentResult | None:
        """The announced answer; None when none came within the window, the watch was
        stopped, Redis did not answer, or the entry is not an `AgentResult`."""
        ends = time.monotonic() + self._window_s
        while not self.stopped and time.monotonic() < ends:
            self.reads += 1
            try:
                streams: Any = await self._redis.xread({self._key: "0"}, count=1, block=self._block)
            except (RedisError, RedisClusterException, OSError):
                return None
            for _key, entries in streams or []:
                for _id, fields in entries:
                    return None if self.stopped else _parsed(fields)
        return None


async def announced_answer(
    redis: aioredis.Redis | None, workflow_id: str, run_id: str
) -> AgentResult | None:
    """The run's answer if it is announced already (one read, no waiting); None when not,
    without Redis or a run id, or when Redis does not answer."""
    if redis is None or not run_id:
        return None
    try:
        entries: Any = await redis.xrange(answer_key(workflow_id, run_id), count=1)
    except (RedisError, RedisClusterException, OSError):
        return None
    return _parsed(entries[0][1]) if entries else None


def _parsed(fields: dict[Any, Any]) -> AgentResult | None:
    raw = fields.get(ANSWER_FIELD.encode(), fields.get(ANSWER_FIELD))
    try:
        return AgentResult.model_validate_json(raw) if raw is not None else None
    except (ValidationError, TypeError):
        return None


async def first_answer(
    result: Awaitable[AgentResult],
    redis: aioredis.Redis | None,
    workflow_id: str,
    run_id: str,
    *,
    window_s: float = ANSWER_WINDOW_S,
) -> AgentResult:
    """The run's answer from whichever says it first: the announcement or `result` (whose
    failure is the caller's, as before). Without Redis or a run id: `result` alone."""
    final = asyncio.ensure_future(result)
    if redis is None or not run_id:
        return await final
    watch = AnswerWatch(redis, workflow_id, run_id, window_s=window_s)
    early = asyncio.ensure_future(watch.answer())
    try:
        await asyncio.wait({final, early}, return_when=asyncio.FIRST_COMPLETED)
        announced = None if final.done() or early.exception() else early.result()
        return announced if announced is not None else await final
    finally:
        watch.stop()
        early.cancel()  # not waited for: a swallowed cancel ends after one read (`stop`)
        early.add_done_callback(lambda done: done.cancelled() or done.exception())
        final.cancel()  # (a no-op once it is done; the announcement made it moot)
