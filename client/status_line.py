"""A spinner with one line of status on the terminal while the CLI waits.

Drawn on stderr, and only when stderr is a terminal: piped output and CI logs stay clean,
and stdout keeps only the answer. `ask` shows the run's stage and steps from its
`progress` query; `up` and `demo` show which processes have started.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from types import TracebackType

from rich.console import Console
from rich.status import Status
from rich.text import Text

from agentkeel.client.agent_client import AgentClient
from agentkeel.schemas.progress import RunProgress
from agentkeel.schemas.result import StepStatus

POLL_S = 0.3
_DONE = {StepStatus.SUCCEEDED, StepStatus.SKIPPED, StepStatus.FAILED, StepStatus.TIMED_OUT}


class StatusLine:
    def __init__(self, text: str, *, console: Console | None = None) -> None:
        self._console = console or Console(stderr=True)
        self._text = text
        self._started = time.monotonic()
        self._status: Status | None = None

    @property
    def enabled(self) -> bool:
        return self._console.is_terminal

    def start(self) -> None:
        if self.enabled and self._status is None:
            self._started = time.monotonic()
            # Text, not markup: a question may hold brackets.
            self._status = Status(self._line(), console=self._console, spinner="dots")
            self._status.start()

    def update(self, text: str) -> None:
        self._text = text
        if self._status is not None:
            self._status.update(self._line())

    def stop(self) -> None:
        status, self._status = self._status, None
        if status is not None:
            status.stop()

    def _line(self) -> Text:
        return Text(f"{self._text}  ({time.monotonic() - self._started:.0f} s)")

    def __enter__(self) -> StatusLine:
        self.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


def describe_progress(progress: RunProgress) -> str:
    """`routing`, `running 3 steps (round 0): 1/3 done, lookup_ticket running`, ..."""
    parts = [progress.stage]
    if progress.steps:
        done = sum(s.status in _DONE for s in progress.steps)
        running = [s.tool for s in progress.steps if s.status is StepStatus.RUNNING]
        parts.append(f"{done}/{len(progress.steps)} steps done")
        if running:
            parts.append(", ".join(running[:3]) + (" ..." if len(running) > 3 else "") + " running")
    if progress.awaiting is not None:
        pending = progress.awaiting
        parts.append(f"waiting for approval {pending.approval_id} of {pending.tool}")
    elif progress.waiting:
        parts.append(f"waiting: {progress.waiting[0].what}")
    return " · ".join(parts)


async def follow_progress(client: AgentClient, workflow_id: str, line: StatusLine) -> None:
    """Keep `line` on the run's progress until cancelled (a failed query only skips a beat)."""
    while True:
        with contextlib.suppress(Exception):
            async with asyncio.timeout(2):
                line.update(describe_progress(await client.progress(workflow_id)))
        await asyncio.sleep(POLL_S)


STACK_PARTS = "Temporal, Postgres, Redis, stand-ins, workers, gateway"


def stack_starting(line: StatusLine) -> Callable[[list[str]], None]:
    """An `on_wait` for `start_detached`: the processes up so far, on `line`."""

    def show(started: list[str]) -> None:
        done = f": {', '.join(started)} started" if started else ""
        line.update(f"starting the local stack ({STACK_PARTS}){done}")

    return show
