"""Heartbeats on a timer while an activity's body runs.

Temporal notices a dead worker within the heartbeat timeout, not the whole start-to-close
timeout, and delivers an activity's cancellation in the answer to a heartbeat. A model
generation has no natural points to heartbeat from, and neither has a side effect waiting
for a row lock: both heartbeat from here, so a cancelled run stops its generation, and a
refund not yet committed rolls back instead of committing after its run was cancelled.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any, TypeVar

from temporalio import activity

T = TypeVar("T")

TOOL_HEARTBEAT_EVERY_S = 1.0
"""Well inside the workflow's tool heartbeat timeout (`workflows.timeouts.TOOL_HEARTBEAT`)."""


@asynccontextmanager
async def heartbeating(every_s: float, *, first_after_s: float = 0.0) -> AsyncIterator[None]:
    """Heartbeat every `every_s` while the body runs (a no-op outside an activity), the
    first time after `first_after_s`: a body that ends sooner sends none."""
    if not activity.in_activity() or activity.info().is_local:
        # A local activity has no heartbeat: its workflow task's own timeouts bound it.
        yield
        return

    async def beat() -> None:
        await asyncio.sleep(first_after_s)
        while True:
            activity.heartbeat()
            await asyncio.sleep(every_s)

    ticker = asyncio.get_running_loop().create_task(beat())
    try:
        yield
    finally:
        ticker.cancel()


def heartbeating_tool(method: Callable[[Any], Awaitable[T]], name: str, every_s: float) -> Any:
    """The tool activity `method` heartbeating every `every_s` once it has run that long.

    A tool call is over in milliseconds and then sends no heartbeat at all; one that waits
    (for a downstream slot, a slow service, a row lock) heartbeats, so a worker killed
    under it is noticed within the workflow's tool heartbeat timeout and the call retried
    on another worker, instead of after its whole start-to-close timeout.
    """

    @functools.wraps(method, updated=())  # not __dict__: it holds the activity definition
    async def run(args: Any) -> T:
        async with heartbeating(every_s, first_after_s=every_s):
            return await method(args)

    return activity.defn(name=name)(run)
