"""The event stream of one run (`GET /v1/runs/{id}/events`), as Server-Sent Events.

Three sources are merged: the run's token stream in Redis (`token`, `reset`), its
`progress` query, polled and sent when it changes (`progress`), and its outcome
(`result` or `error`, always last). The token stream is read from its first entry, so a
client that connects late gets the answer so far; every event's id is the position in the
token stream reached so far, so a client that reconnects with `Last-Event-ID` resumes
after the last token it saw (progress, being state, is sent again as it is now).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import redis.asyncio as aioredis
import structlog

from schemas.gateway import RunEventType
from schemas.progress import RunProgress
from schemas.tokens import TokenEvent, TokenEventType, token_stream_key
from workers.client.token_follow import TokenReader
from workers.gateway.runs import Runs

PROGRESS_EVERY_S = 0.25
log = structlog.get_logger(__name__)


@dataclass(frozen=True)
class RunEvent:
    type: RunEventType
    data: str
    id: str


_STREAM_ID_CHARS = frozenset("0123456789-")


def resume_point(last_event_id: str | None) -> str:
    """The token-stream position to resume after; `0` (the start) for anything else."""
    if last_event_id and set(last_event_id) <= _STREAM_ID_CHARS and last_event_id[0].isdigit():
        return last_event_id
    return "0"


async def run_events(
    runs: Runs, redis: aioredis.Redis | None, workflow_id: str, last_event_id: str | None
) -> AsyncIterator[RunEvent]:
    """Every event of the run until its outcome; cancelling the iteration stops them all."""
    queue: asyncio.Queue[RunEvent | None] = asyncio.Queue()
    cursor = _Cursor(resume_point(last_event_id))
    tasks = [asyncio.create_task(_progress(runs, workflow_id, queue, cursor))]
    follow: _Follow | None = None
    if redis is not None:
        run_id = (await runs.handle(workflow_id).describe()).run_id
        reader = TokenReader(redis, token_stream_key(workflow_id, run_id), idle_timeout_s=None)
        reader.last_id = cursor.position
        follow = _Follow(reader, run_id, asyncio.create_task(_tokens(reader, queue, cursor)))
        tasks.append(follow.task)
    tasks.append(asyncio.create_task(_outcome(runs, workflow_id, queue, cursor, follow, redis)))
    try:
        while (event := await queue.get()) is not None:
            yield event
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


@dataclass
class _Follow:
    reader: TokenReader
    run_id: str
    task: asyncio.Task[None]


class _Cursor:
    """The token-stream position reached: the id of every event sent."""

    def __init__(self, position: str) -> None:
        self.position = position


async def _progress(
    runs: Runs, workflow_id: str, queue: asyncio.Queue[RunEvent | None], cursor: _Cursor
) -> None:
    last: RunProgress | None = None
    while True:
        progress = await runs.progress(workflow_id)
        if progress is not None and progress != last:
            last = progress
            await queue.put(
                RunEvent(RunEventType.PROGRESS, progress.model_dump_json(), cursor.position)
            )
        await asyncio.sleep(PROGRESS_EVERY_S)


async def _tokens(
    reader: TokenReader, queue: asyncio.Queue[RunEvent | None], cursor: _Cursor
) -> None:
    try:
        async for event in reader.follow():
            await _relay(event, reader, queue, cursor)
    except Exception as exc:  # the stream is a preview: the outcome still comes
        log.warning("gateway_token_stream_failed", error=repr(exc))


async def _relay(
    event: TokenEvent,
    reader: TokenReader,
    queue: asyncio.Queue[RunEvent | None],
    cursor: _Cursor,
) -> None:
    last_id = reader.last_id
    cursor.position = last_id.decode() if isinstance(last_id, bytes) else str(last_id)
    if event.type is TokenEventType.TOKEN:
        data: dict[str, Any] = {"text": event.text, "attempt": event.attempt}
        await queue.put(RunEvent(RunEventType.TOKEN, json.dumps(data), cursor.position))
    elif event.type is TokenEventType.RESET:
        data = {"attempt": event.attempt}
        await queue.put(RunEvent(RunEventType.RESET, json.dumps(data), cursor.position))
    # `done` and `cancelled` are told by the outcome that follows.


async def _outcome(
    runs: Runs,
    workflow_id: str,
    queue: asyncio.Queue[RunEvent | None],
    cursor: _Cursor,
    follow: _Follow | None,
    redis: aioredis.Redis | None,
) -> None:
    handle = runs.handle(workflow_id)
    result, error = await runs.outcome(handle)
    if follow is not None and redis is not None:
        await _rest_of_stream(handle, follow, redis, queue, cursor)
    if result is not None:
        await queue.put(RunEvent(RunEventType.RESULT, result.model_dump_json(), cursor.position))
    else:
        state = (await handle.describe()).status
        data = {"state": state.name.lower() if state else "unknown", "message": error}
        await queue.put(RunEvent(RunEventType.ERROR, json.dumps(data), cursor.position))
    await queue.put(None)


async def _rest_of_stream(
    handle: Any,
    follow: _Follow,
    redis: aioredis.Redis,
    queue: asyncio.Queue[RunEvent | None],
    cursor: _Cursor,
) -> None:
    """What the stream holds that was not sent yet, read once without waiting: the respond
    step wrote its `done` before the run could finish, so tokens never follow the result.
    A run that continued as new answered under its last run id: that stream is read whole."""
    follow.task.cancel()
    await asyncio.gather(follow.task, return_exceptions=True)
    reader = follow.reader
    final_run = (await handle.describe()).run_id
    if final_run != follow.run_id:
        reader = TokenReader(redis, token_stream_key(handle.id, final_run), idle_timeout_s=None)
    try:
        async with asyncio.timeout(1.0):
            for event in await reader.drain():
                await _relay(event, reader, queue, cursor)
    except Exception as exc:
        log.warning("gateway_token_stream_failed", error=repr(exc))
