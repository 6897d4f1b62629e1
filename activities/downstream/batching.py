"""Merged calls: calls of a batching tool that arrive together go as one request.

The first call of a batch opens a window (`merge_window_ms`); every call arriving within
it, from this run or any other on this worker, joins, up to `max_batch`. The batch goes
to the tool's `many` function as one request, and each caller gets its own result or its
own error. A longer window merges more but delays the first result by up to the window:
`bench/downstream.py` measures both.
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Generic, TypeVar

A = TypeVar("A")
R = TypeVar("R")

Many = Callable[[Sequence[A]], Awaitable[Sequence[R | BaseException]]]
"""One request for all the arguments; per argument, its result or its error."""


class Batcher(Generic[A, R]):
    def __init__(self, many: Many[A, R], *, window_s: float, max_batch: int = 100) -> None:
        self._many = many
        self._window_s = window_s
        self._max_batch = max_batch
        self._pending: list[tuple[A, asyncio.Future[R]]] = []
        self._timer: asyncio.TimerHandle | None = None
        self._sending: set[asyncio.Task[None]] = set()
        self.requests = 0
        """Requests sent (for tests and benchmarks)."""

    async def call(self, args: A) -> R:
        future: asyncio.Future[R] = asyncio.get_running_loop().create_future()
        self._pending.append((args, future))
        if len(self._pending) >= self._max_batch:
            self._flush()
        elif self._timer is None:
            self._timer = asyncio.get_running_loop().call_later(self._window_s, self._flush)
        return await asyncio.shield(future)

    def _flush(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        batch, self._pending = self._pending, []
        if batch:
            self.requests += 1
            task = asyncio.ensure_future(self._send(batch))
            self._sending.add(task)
            task.add_done_callback(self._sending.discard)

    async def _send(self, batch: list[tuple[A, asyncio.Future[R]]]) -> None:
        try:
            results: Sequence[Any] = await self._many([args for args, _ in batch])
            if len(results) != len(batch):
                raise RuntimeError(f"{len(results)} results for a batch of {len(batch)}")
        except BaseException as exc:  # the request as a whole failed: so did every call
            results = [exc] * len(batch)
        for (_, future), result in zip(batch, results, strict=True):
            if future.done():  # its caller was cancelled
                continue
            if isinstance(result, BaseException):
                # Each caller raises its own copy: one instance raised in many activities
                # would share (and garble) one traceback.
                future.set_exception(copy.copy(result))
            else:
                future.set_result(result)
