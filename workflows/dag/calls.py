"""The scheduler's vocabulary: one tool call, and what the scheduler is given to run it.

Shared by the scheduler, the workflow's dispatch and the fan-out children; independent of
Temporal (the workflow injects dispatch, sleep and the error description).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from agentkeel.schemas.progress import Waiting
from agentkeel.schemas.result import StepError


@dataclass(frozen=True)
class ToolCall:
    """One activity to run: a whole step, or one element of a `for_each` step."""

    step_id: str
    tool: str
    args: dict[str, Any]
    index: int | None = None
    """Position in a `for_each` expansion; None for a plain step."""
    watch: bool = False
    """A run of a repeated step: it reads the source, never a cached result."""
    batch: tuple[dict[str, Any], ...] | None = None
    """A large `for_each` step run as one unit (child workflows of their own): the
    arguments of each element. Its output is an `OutputRef`-shaped dict, not the list."""
    round: int = 0
    """The planning round of the step (a batch's stored outputs are named by it)."""

    @property
    def call_id(self) -> str:
        return self.step_id if self.index is None else f"{self.step_id}[{self.index}]"


Dispatch = Callable[[ToolCall], Awaitable[Any]]
DescribeError = Callable[[BaseException], StepError]
Sleep = Callable[[timedelta, str], Awaitable[None]]
"""Wait `duration` (inside a workflow, a durable timer with this summary)."""
OnWait = Callable[[str, Waiting | None], None]
"""A step starts waiting (with what it waits for) or stops (None)."""


async def plain_sleep(duration: timedelta, summary: str) -> None:
    """`Sleep` outside a workflow (unit tests, the benchmark's in-process scheduler)."""
    await asyncio.sleep(duration.total_seconds())
