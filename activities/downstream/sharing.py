"""Shared reads: an idempotent read already in flight is awaited, not sent again.

Keyed like the tool-result cache (tool, arguments, audience), so a caller only ever
shares a read it could have made itself; side effects never come here. The window is the
flight itself: once the first caller's read returns, the next one reads anew.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

T = TypeVar("T")


class SharedReads:
    def __init__(self) -> None:
        self._flights: dict[str, asyncio.Future[Any]] = {}
        self.shared = 0
        """Reads answered by another caller's flight (for tests and benchmarks)."""

    async def read(self, key: str, fetch: Callable[[], Awaitable[T]]) -> T:
        flight = self._flights.get(key)
        if flight is not None:
            self.shared += 1
            # shield: one caller cancelled (its run was) must not cancel the others' read
            result: T = await asyncio.shield(flight)
            return result
        flight = asyncio.ensure_future(fetch())
        self._flights[key] = flight
        flight.add_done_callback(lambda _: self._flights.pop(key, None))
        return await asyncio.shield(flight)
