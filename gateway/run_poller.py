"""One `progress` poller per run, shared by every event stream of this gateway following it.

The `progress` query needs a worker to answer it; a stream per client polling it four
times a second would make a run followed by a thousand browsers cost its worker four
thousand queries a second. The first subscriber to a run starts its poller, the last one
to leave stops it; each subscriber sees the latest progress (one that reads slowly skips
to the newest: progress is state, not a log).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from agentkeel.gateway.runs import Runs
from agentkeel.schemas.progress import RunProgress

PROGRESS_EVERY_S = 0.25


class ProgressUpdates:
    """One subscriber's view: `next()` waits for progress newer than it last returned."""

    def __init__(self) -> None:
        self._latest: RunProgress | None = None
        self._changed = asyncio.Event()

    def offer(self, progress: RunProgress) -> None:
        self._latest = progress
        self._changed.set()

    async def next(self) -> RunProgress:
        await self._changed.wait()
        self._changed.clear()
        assert self._latest is not None
        return self._latest


class _Poller:
    def __init__(self, runs: Runs, workflow_id: str, every_s: float) -> None:
        self.subscribers: set[ProgressUpdates] = set()
        self.latest: RunProgress | None = None
        self.task = asyncio.create_task(self._poll(runs, workflow_id, every_s))

    async def _poll(self, runs: Runs, workflow_id: str, every_s: float) -> None:
        while True:
            progress = await runs.progress(workflow_id)
            if progress is not None and progress != self.latest:
                self.latest = progress
                for subscriber in self.subscribers:
                    subscriber.offer(progress)
            await asyncio.sleep(every_s)


class RunPollers:
    """The pollers of this process, by workflow id."""

    def __init__(self, runs: Runs, every_s: float = PROGRESS_EVERY_S) -> None:
        self.runs = runs
        self.every_s = every_s
        self._pollers: dict[str, _Poller] = {}

    @property
    def polled(self) -> frozenset[str]:
        """The runs polled now."""
        return frozenset(self._pollers)

    @asynccontextmanager
    async def subscribe(self, workflow_id: str) -> AsyncIterator[ProgressUpdates]:
        """The run's progress as it changes, starting with the latest known."""
        poller = self._pollers.get(workflow_id)
        if poller is None:
            poller = self._pollers[workflow_id] = _Poller(self.runs, workflow_id, self.every_s)
        updates = ProgressUpdates()
        if poller.latest is not None:
            updates.offer(poller.latest)
        poller.subscribers.add(updates)
        try:
            yield updates
        finally:
            poller.subscribers.discard(updates)
            if not poller.subscribers and self._pollers.get(workflow_id) is poller:
                del self._pollers[workflow_id]
                poller.task.cancel()
                await asyncio.gather(poller.task, return_exceptions=True)
