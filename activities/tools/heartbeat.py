"""Heartbeats while a side effect runs: how a run's cancellation reaches it in time.

Temporal delivers an activity's cancellation in the answer to a heartbeat. A side effect
that heartbeats while it waits (for a row lock, say) is cancelled there, and its
transaction rolls back: a refund not yet committed never commits after its run was
cancelled.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from temporalio import activity

HEARTBEAT_EVERY_S = 0.5


@asynccontextmanager
async def heartbeating(every_s: float = HEARTBEAT_EVERY_S) -> AsyncIterator[None]:
    """Heartbeat every `every_s` while the body runs (a no-op outside an activity)."""
    if not activity.in_activity():
        yield
        return

    async def beat() -> None:
        while True:
            activity.heartbeat()
            await asyncio.sleep(every_s)

    task = asyncio.get_running_loop().create_task(beat())
    try:
        yield
    finally:
        task.cancel()
