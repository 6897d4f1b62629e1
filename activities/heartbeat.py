"""Heartbeats on a timer while an activity's body runs.

Temporal notices a dead worker within the heartbeat timeout, not the whole start-to-close
timeout, and delivers an activity's cancellation in the answer to a heartbeat. A model
generation has no natural points to heartbeat from, and neither has a side effect waiting
for a row lock: both heartbeat from here, so a cancelled run stops its generation, and a
refund not yet committed rolls back instead of committing after its run was cancelled.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from temporalio import activity


@asynccontextmanager
async def heartbeating(every_s: float) -> AsyncIterator[None]:
    """Heartbeat every `every_s` while the body runs (a no-op outside an activity)."""
    if not activity.in_activity():
        yield
        return

    async def beat() -> None:
        while True:
            activity.heartbeat()
            await asyncio.sleep(every_s)

    ticker = asyncio.get_running_loop().create_task(beat())
    try:
        yield
    finally:
        ticker.cancel()
