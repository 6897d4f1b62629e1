"""A run's event stream read from real Redis: it opens with progress, and sends only the
resets that drop text."""

from __future__ import annotations

import asyncio
import json
import uuid
from dataclasses import dataclass
from typing import Any

import redis.asyncio as aioredis

from agentkeel.activities.token_stream import TokenStream
from agentkeel.gateway.events import RunEvent, run_events
from agentkeel.schemas.progress import RunProgress
from agentkeel.schemas.tokens import token_stream_key


@dataclass
class _Ran:
    run_id: str
    status: Any = None


class _FinishedRuns:
    """A `Runs` for a run whose token stream is already whole when the client connects,
    whose `progress` answers slower than Redis (a worker round trip), and that ends once
    `finish` is set."""

    def __init__(self, run_id: str, progress_after_s: float) -> None:
        self.run_id, self.progress_after_s = run_id, progress_after_s
        self.finish = asyncio.Event()

    def handle(self, workflow_id: str) -> Any:
        runs = self

        class _H:
            id = workflow_id

            async def describe(self) -> _Ran:
                return _Ran(runs.run_id)

        return _H()

    async def progress(self, workflow_id: str) -> RunProgress:
        await asyncio.sleep(self.progress_after_s)
        return RunProgress(stage="responding")

    async def outcome(self, handle: Any) -> tuple[None, str]:
        await self.finish.wait()
        return None, "ended by the test"


async def test_a_stream_opens_with_progress_and_sends_only_resets_that_drop_text(
    redis: aioredis.Redis,
) -> None:
    workflow_id, run_id = f"test-{uuid.uuid4().hex[:12]}", uuid.uuid4().hex
    key = token_stream_key(workflow_id, run_id)
    first, retry = TokenStream(redis, key, attempt=1), TokenStream(redis, key, attempt=2)
    await first.publish("Half ")  # a first attempt's reset rides with its first token
    await retry.begin()
    await retry.publish("Whole.")
    runs = _FinishedRuns(run_id, progress_after_s=0.1)
    events: list[RunEvent] = []
    try:
        async with asyncio.timeout(10):
            async for event in run_events(runs, redis, workflow_id, None):  # type: ignore[arg-type]
                events.append(event)
                if event.type.value == "token" and "Whole." in event.data:
                    runs.finish.set()
    finally:
        await redis.expire(key, 60)
    kinds = [e.type.value for e in events]
    assert kinds == ["progress", "token", "reset", "token", "error"], kinds
    assert json.loads(events[2].data) == {"attempt": 2}

    # Resumed after the first attempt's token, once the run has ended: that text is
    # dropped by the retry's reset before the retry's text.
    resumed = [e async for e in run_events(runs, redis, workflow_id, events[1].id)]  # type: ignore[arg-type]
    kinds = [e.type.value for e in resumed if e.type.value != "progress"]
    assert kinds == ["reset", "token", "error"]
    await redis.delete(key)
