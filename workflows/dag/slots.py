"""Concurrency slots and interruptible pauses of one plan's run.

A call holds a slot while it works. A watch gives its slot back while it sleeps between
two reads and takes one again before the next, and a `wait` never holds one: a timer
loads no downstream, and a run with two watches must not starve its other steps for
the length of the watch. Pauses end early when the run continues as new.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import timedelta

from agentkeel.workflows.dag.calls import Sleep


class Slots:
    def __init__(self, max_total: int, cap_of: Callable[[str], int | None]) -> None:
        self._max_total = max_total
        self._cap_of = cap_of
        self.total = 0
        self._per_tool: dict[str, int] = {}
        self._holding: set[str] = set()
        self._waiters: list[asyncio.Future[None]] = []
        self.max_observed = 0

    def fits(self, tool: str) -> bool:
        cap = self._cap_of(tool)
        return self.total < self._max_total and (cap is None or self._per_tool.get(tool, 0) < cap)

    def take(self, call_id: str, tool: str) -> None:
        self._holding.add(call_id)
        self.total += 1
        self._per_tool[tool] = self._per_tool.get(tool, 0) + 1
        self.max_observed = max(self.max_observed, self.total)

    def give_back(self, call_id: str, tool: str) -> bool:
        """Free the slot `call_id` holds, if any; whether it held one."""
        if call_id not in self._holding:
            return False
        self._holding.discard(call_id)
        self.total -= 1
        self._per_tool[tool] -= 1
        waiters, self._waiters = self._waiters, []
        for waiter in waiters:  # each looks again; one that does not fit waits again
            if not waiter.done():
                waiter.set_result(None)
        return True

    async def take_when_free(self, call_id: str, tool: str) -> None:
        while not self.fits(tool):
            waiter = asyncio.get_running_loop().create_future()
            self._waiters.append(waiter)
            await waiter
        self.take(call_id, tool)


class Pauses:
    """Sleeps that end early, all at once, when the run is to continue as new."""

    def __init__(self, sleep: Sleep) -> None:
        self._sleep = sleep
        self.stopping = False
        self._wakers: list[asyncio.Future[None]] = []

    def stop_all(self) -> None:
        self.stopping = True
        wakers, self._wakers = self._wakers, []
        for waker in wakers:
            if not waker.done():
                waker.set_result(None)

    async def sleep(self, duration: timedelta, summary: str) -> bool:
        """Sleep `duration`; False when cut short by `stop_all` (nothing more happens)."""
        if self.stopping:
            return False
        loop = asyncio.get_running_loop()
        waker: asyncio.Future[None] = loop.create_future()
        sleeper = asyncio.ensure_future(self._sleep(duration, summary))

        def wake(_: object) -> None:
            if not waker.done():
                waker.set_result(None)

        sleeper.add_done_callback(wake)
        self._wakers.append(waker)
        try:
            await waker
        finally:
            if waker in self._wakers:
                self._wakers.remove(waker)
            if not sleeper.done():
                sleeper.cancel()
                await asyncio.gather(sleeper, return_exceptions=True)
        if sleeper.cancelled():
            return False
        sleeper.result()  # a failed timer is the run's failure, not a short sleep
        return True
