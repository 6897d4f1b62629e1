"""The client's readers: the exact tier of the path cache in Redis, outputs in Postgres.

Both read what the workers wrote, through the contracts alone (`schemas.path_cache`,
`schemas.outputs`): the client carries none of the worker side's cache engine. The
exact tier is read under the version the workers publish (`client.served_version`), so a
long-lived client stops serving paths of a changed catalog within a second.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Sequence

import asyncpg
import redis.asyncio as aioredis
import structlog
from pydantic import ValidationError

from agentkeel.client.fast_hits import count_fast_hit
from agentkeel.client.served_version import REDIS_ERRORS, ServedVersion
from agentkeel.schemas.outputs import output_ref, resolve_refs
from agentkeel.schemas.path_cache import PathEntry, path_key
from agentkeel.schemas.request import AgentRequest
from agentkeel.schemas.result import AgentResult, StepOutcome

log = structlog.get_logger(__name__)


class ExactAnswers:
    """`client.fast_path.AnswerCache` over the exact tier: one Redis read per ask (and the
    served version once a second at most)."""

    def __init__(self, redis: aioredis.Redis, *, task_queue: str, namespace: str) -> None:
        self._redis = redis
        self._served = ServedVersion(redis, task_queue, namespace)
        self._where = {"namespace": namespace, "task_queue": task_queue}
        self._counting: set[asyncio.Task[None]] = set()

    async def exact_answer(self, request: AgentRequest) -> AgentResult | None:
        # No worker published a version (a release before publication): serve nothing.
        version = await self._served.current(None)
        if version is None:
            return None
        key = path_key(
            request.tenant,
            request.question,
            version,
            request.conversation_id,
            request.actor.audience,
        )
        try:
            raw = await self._redis.get(key)
        except REDIS_ERRORS as exc:
            log.debug("fast_path_unavailable", error=repr(exc))
            return None  # the workflow's own lookup will say so in the result
        if raw is None:
            return None
        try:
            entry = PathEntry.model_validate_json(raw)
        except ValidationError:
            return None  # another release's entry: the run's lookup replaces it
        fresh = entry.answer_fresh_until is not None and time.time() < entry.answer_fresh_until
        if not fresh:
            return None
        # No run will record this answer: counted for `agentkeel stats` (`client.fast_hits`),
        # beside the answer rather than before it (a hit costs no extra round trip).
        counting = asyncio.create_task(
            count_fast_hit(self._redis, tenant=request.tenant, **self._where)
        )
        self._counting.add(counting)
        counting.add_done_callback(self._counting.discard)
        return entry.result

    async def close(self) -> None:
        await asyncio.gather(*self._counting, return_exceptions=True)  # counts not lost
        await self._redis.aclose()


class PostgresOutputs:
    """`client.fast_path.OutputReader`: one short connection per result that needs it."""

    def __init__(self, database_url: str) -> None:
        self._database_url = database_url

    async def resolved(self, steps: Sequence[StepOutcome]) -> list[StepOutcome]:
        refs = [ref for s in steps if (ref := output_ref(s))]
        connection = await asyncpg.connect(self._database_url)
        try:
            rows = await connection.fetch(
                "SELECT ref, output FROM agent_outputs WHERE ref = ANY($1::text[])", refs
            )
        finally:
            await connection.close()
        return resolve_refs(steps, {row["ref"]: json.loads(row["output"]) for row in rows})
