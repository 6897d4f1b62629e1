"""Counting what runs at once: the peak of calls in flight."""

from __future__ import annotations

import asyncio


class Gauge:
    def __init__(self) -> None:
        self.now = 0
        self.peak = 0

    async def hold(self, seconds: float) -> None:
        self.now += 1
        self.peak = max(self.peak, self.now)
        try:
            await asyncio.sleep(seconds)
        finally:
            self.now -= 1
