"""The event stream of one run (`GET /v1/runs/{id}/events`), as Server-Sent Events.

Three sources are merged: the run's token stream in Redis (`token`, `reset`), its
`progress` query, polled once per run for all streams (`run_poller.py`) and sent when it
changes (`progress`; the stream opens with it), and its outcome (`result` or `error`,
always last, and always sent: a stream never hangs). The token stream is read from its
first entry, so a client that connects late gets the answer so far; a `reset` is sent only
to a client that holds text it drops. Every event's id is `<token-stream position>/<attempt>`:
a client that reconnects with `Last-Event-ID` resumes after the last token it saw, still
ignoring a superseded attempt's (progress, being state, is sent again as it is now). A run
that continues as new answers under its new run id: the follower moves to that run's stream
when the progress shows it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import redis.asyncio as aioredis
import structlog

from agentkeel.client.token_follow import STOP_GRACE_S, TokenReader, stop_follower
from agentkeel.gateway.run_poller import RunPollers
from agentkeel.gateway.runs import Runs
from agentkeel.schemas.gateway import RunEventType
from agentkeel.schemas.progress import RunProgress
from agentkeel.schemas.tokens import TokenEvent, TokenEventType, token_stream_key

DRAIN_TIMEOUT_S = 1.0
FIRST_PROGRESS_WAIT_S = 0.5
"""How long the token relay waits for the run's first `progress`, so a stream opens with
where the run stands; the query is one worker round trip, far less than a model's first
token, so the wait costs nothing unless the worker is slow to answer."""
log = structlog.get_logger(__name__)


@dataclass(frozen=True)
class RunEvent:
    type: RunEventType
    data: str
    id: str


_DIGITS = re.compile(r"[0-9]{1,19}")
"""A part of an event id: ASCII digits, at most a 64-bit number's (`"²".isdigit()` holds, and
`int` refuses 5000 digits: a header is untrusted input)."""


def resume_point(last_event_id: str | None) -> tuple[str, int]:
    """(token-stream position, attempt) to resume after; the start for anything else."""
    position, _, attempt = (last_event_id or "").partition("/")
    head, _, seq = position.partition("-")
    if _DIGITS.fullmatch(head) and (seq == "" or _DIGITS.fullmatch(seq)):
        return position, int(attempt) if _DIGITS.fullmatch(attempt) else 0
    return "0", 0


async def run_events(
    runs: Runs,
    redis: aioredis.Redis | None,
    workflow_id: str,
    last_event_id: str | None,
    pollers: RunPollers | None = None,
) -> AsyncIterator[RunEvent]:
    """Every event of the run until its outcome; cancelling the iteration stops them all.
    `pollers`: the gateway's, shared by its streams (one of its own without)."""
    stream = _RunStream(
        runs, pollers or RunPollers(runs), redis, workflow_id, *resume_point(last_event_id)
    )
    try:
        await stream.start()
        while (event := await stream.queue.get()) is not None:
            yield event
    finally:
        await stream.stop()


class _RunStream:
    def __init__(
        self,
        runs: Runs,
        pollers: RunPollers,
        redis: aioredis.Redis | None,
        workflow_id: str,
        position: str,
        attempt: int,
    ) -> None:
        self.runs, self.pollers, self.redis, self.workflow_id = runs, pollers, redis, workflow_id
        self.queue: asyncio.Queue[RunEvent | None] = asyncio.Queue()
        self.position, self.attempt = position, attempt
        self.reader: TokenReader | None = None
        self.run_id = ""
        self._follower: asyncio.Task[None] | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self._opened = asyncio.Event()
        self._finishing = False
        """Set once the outcome is in: the final drain owns the stream from then on."""
        # Whether the client may hold text a reset must drop: it resumed after some, or
        # this connection sent some. A reset that drops nothing is not sent.
        self._holds_text = position != "0"

    @property
    def event_id(self) -> str:
        return f"{self.position}/{self.attempt}"

    async def start(self) -> None:
        self.run_id = (await self.runs.handle(self.workflow_id).describe()).run_id
        self._follow(self.run_id, self.position)
        self._tasks = [asyncio.create_task(self._progress()), asyncio.create_task(self._outcome())]

    async def stop(self) -> None:
        if self.reader is not None:
            self.reader.stop()
        tasks = [*self._tasks, *([self._follower] if self._follower else [])]
        for task in tasks:
            task.cancel()
        # Bounded: a follower whose cancellation redis-py swallowed ends by itself after
        # its read (see `token_follow.STOP_GRACE_S`).
        if tasks:
            done, _ = await asyncio.wait(tasks, timeout=STOP_GRACE_S)
            for task in done:  # retrieved, so none is logged as never retrieved
                if not task.cancelled():
                    task.exception()

    def _follow(self, run_id: str, position: str) -> None:
        if self.redis is None:
            return
        self.reader = TokenReader(
            self.redis, token_stream_key(self.workflow_id, run_id), idle_timeout_s=None
        )
        self.reader.last_id = position
        self._follower = asyncio.create_task(self._tokens(self.reader))

    async def _tokens(self, reader: TokenReader) -> None:
        # (A cancel that lands as this wait ends can be lost in Python 3.11's wait_for;
        # `reader.stop()` still ends the follow.)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._opened.wait(), FIRST_PROGRESS_WAIT_S)
        try:
            async for event in reader.follow():
                await self._relay(event, reader.last_id)
        except Exception as exc:  # the stream is a preview: the outcome still comes
            log.warning("gateway_token_stream_failed", error=repr(exc))

    async def _relay(self, event: TokenEvent, entry_id: bytes | str) -> None:
        self.position = entry_id.decode() if isinstance(entry_id, bytes) else str(entry_id)
        if event.attempt < self.attempt:
            return  # a superseded attempt still writing: not the answer
        self.attempt = event.attempt
        if event.type is TokenEventType.TOKEN:
            data: dict[str, Any] = {"text": event.text, "attempt": event.attempt}
            self._holds_text = True
            await self._put(RunEventType.TOKEN, json.dumps(data))
        elif event.type is TokenEventType.RESET and self._holds_text:
            self._holds_text = False
            await self._put(RunEventType.RESET, json.dumps({"attempt": event.attempt}))
        # `done` and `cancelled` are told by the outcome that follows.

    async def _put(self, kind: RunEventType, data: str) -> None:
        await self.queue.put(RunEvent(kind, data, self.event_id))

    async def _progress(self) -> None:
        last: RunProgress | None = None
        async with self.pollers.subscribe(self.workflow_id) as updates:
            while True:
                progress = await updates.next()
                if last is not None and progress.continued != last.continued:
                    await self._switch_run()
                last = progress
                await self._put(RunEventType.PROGRESS, progress.model_dump_json())
                self._opened.set()

    async def _switch_run(self) -> None:
        """The run continued as new: follow the new run's stream from its start."""
        with contextlib.suppress(Exception):
            run_id = (await self.runs.handle(self.workflow_id).describe()).run_id
            if run_id != self.run_id and self.redis is not None and not self._finishing:
                if self._follower is not None and self.reader is not None:
                    await stop_follower(self.reader, self._follower)
                if self._finishing or run_id == self.run_id:
                    return  # the outcome came meanwhile: its drain reads the final run
                self.run_id, self.attempt = run_id, 0
                self._follow(run_id, "0")

    async def _outcome(self) -> None:
        """The last event, whatever happens: the result, the run's error, or the gateway's."""
        try:
            handle = self.runs.handle(self.workflow_id)
            result, error = await self.runs.outcome(handle)
            self._finishing = True
            self._opened.set()
            await self._rest_of_stream(handle)
            if result is not None:
                await self._put(RunEventType.RESULT, result.model_dump_json())
            else:
                status = (await handle.describe()).status
                state = status.name.lower() if status else "unknown"
                await self._put(RunEventType.ERROR, json.dumps({"state": state, "message": error}))
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            log.warning("gateway_outcome_unreadable", workflow_id=self.workflow_id, error=repr(exc))
            message = f"the gateway could not read the run's outcome: {exc}"
            await self._put(
                RunEventType.ERROR, json.dumps({"state": "unknown", "message": message})
            )
        finally:
            self.queue.put_nowait(None)

    async def _rest_of_stream(self, handle: Any) -> None:
        """What the stream holds that was not sent yet, read once without waiting: the
        respond step wrote its `done` before the run could finish, so tokens never follow
        the result. A run that continued as new answered under its last run id."""
        if self.redis is None:
            return
        if self._follower is not None and self.reader is not None:
            await stop_follower(self.reader, self._follower)
        try:
            final_run = (await handle.describe()).run_id
            if final_run != self.run_id or self.reader is None:
                self.run_id, self.attempt = final_run, 0
                key = token_stream_key(self.workflow_id, final_run)
                self.reader = TokenReader(self.redis, key, idle_timeout_s=None)
            reader = self.reader
            async with asyncio.timeout(DRAIN_TIMEOUT_S):
                for entry_id, event in await reader.drain_with_ids():
                    await self._relay(event, entry_id)
        except Exception as exc:
            log.warning("gateway_token_stream_failed", error=repr(exc))
