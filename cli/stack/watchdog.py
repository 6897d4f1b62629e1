"""Restarts the local stack's children when they die, with backoff, and gives up on one that
keeps dying: a crashed worker or stand-in service is back in seconds, and a child that cannot
run is reported (`agentkeel status`, the log) instead of being restarted forever.

What each child is doing is written to `<state_dir>/status.json` at every change.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path

import structlog

from agentkeel.cli.stack.procs import Child, signal_group, start_child

log = structlog.get_logger(__name__)

BACKOFF_S = (0.5, 1.0, 2.0, 4.0, 8.0)
"""Pause before the n-th restart within the crash window."""
GIVE_UP_AFTER = 5
"""Deaths within `CRASH_WINDOW_S` after which a child is left down and reported as failed."""
CRASH_WINDOW_S = 120.0


class ChildState:
    RUNNING = "running"
    RESTARTING = "restarting"
    FAILED = "failed"
    STOPPED = "stopped"


@dataclass
class ChildStatus:
    """One child as `agentkeel status` shows it."""

    name: str
    pid: int
    state: str
    started_at: str
    log: str
    restarts: int = 0
    last_exit: str | None = None
    """How it last ended (`code 1`, `signal SIGKILL`) and when, once it has."""


def describe_exit(code: int | None) -> str:
    if code is not None and code < 0:
        with contextlib.suppress(ValueError):
            return f"signal {signal.Signals(-code).name}"
    return f"code {code}"


class Watchdog:
    """Watches `children` and restarts each one that exits while the stack is up."""

    def __init__(
        self,
        children: Sequence[Child],
        status_path: Path,
        *,
        on_restart: Callable[[Child], Awaitable[None] | None] = lambda child: None,
        backoff_s: Sequence[float] = BACKOFF_S,
        give_up_after: int = GIVE_UP_AFTER,
        crash_window_s: float = CRASH_WINDOW_S,
    ) -> None:
        self._children = list(children)
        self._status_path = status_path
        self._on_restart = on_restart
        self._backoff_s = backoff_s
        self._give_up_after = give_up_after
        self._crash_window_s = crash_window_s
        self._status = {c.name: _status_of(c) for c in self._children}
        self._tasks: list[asyncio.Task[None]] = []

    def start(self) -> None:
        self._write()
        self._tasks = [asyncio.create_task(self._watch(c)) for c in self._children]

    async def stop(self) -> None:
        """Stop watching (the stack is going down: exits from now on are expected)."""
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._tasks = []
        for status in self._status.values():
            if status.state != ChildState.FAILED:
                status.state = ChildState.STOPPED
        self._write()

    def statuses(self) -> list[ChildStatus]:
        return list(self._status.values())

    async def _watch(self, child: Child) -> None:
        deaths: list[float] = []
        status = self._status[child.name]
        while True:
            code = await child.proc.wait()
            # What it left behind (an engine's subprocess holding a GPU or a port) goes
            # with it, or the restart would fail on what the dead one still holds.
            signal_group(child.pid, signal.SIGKILL)
            now = time.monotonic()
            deaths = [t for t in deaths if now - t < self._crash_window_s] + [now]
            status.last_exit = f"{describe_exit(code)} at {_now()}"
            if len(deaths) > self._give_up_after:
                status.state = ChildState.FAILED
                self._write()
                log.error(
                    "stack.child_failed",
                    child=child.name,
                    exit=describe_exit(code),
                    deaths=len(deaths),
                    within_s=self._crash_window_s,
                    log=str(child.log_path),
                )
                return
            pause = self._backoff_s[min(len(deaths) - 1, len(self._backoff_s) - 1)]
            status.state = ChildState.RESTARTING
            self._write()
            log.warning(
                "stack.child_exited",
                child=child.name,
                exit=describe_exit(code),
                restart_in_s=pause,
                tail=child.tail(),
            )
            await asyncio.sleep(pause)
            try:
                await _restart(child)
            except Exception as exc:  # could not even start: counts as another death
                log.error("stack.child_restart_failed", child=child.name, error=str(exc))
                continue
            status.pid, status.started_at = child.pid, child.started_at.isoformat()
            status.state, status.restarts = ChildState.RUNNING, status.restarts + 1
            self._write()
            log.warning(
                "stack.child_restarted", child=child.name, pid=child.pid, restarts=status.restarts
            )
            try:
                restarted = self._on_restart(child)
                if restarted is not None:
                    await restarted
            except Exception as exc:  # the child runs; only its bookkeeping failed
                log.error("stack.child_restart_not_recorded", child=child.name, error=str(exc))

    def _write(self) -> None:
        try:
            write_status(self._status_path, self.statuses())
        except OSError as exc:  # a full disk must not stop the watching
            log.error("stack.status_not_written", path=str(self._status_path), error=str(exc))


async def _restart(child: Child) -> None:
    """Start `child` again as it was started, in place (so whoever holds it stops the new one)."""
    again = await start_child(child.name, child.argv, child.log_path.parent, child.env)
    child.proc, child.log_offset, child.started_at = again.proc, again.log_offset, again.started_at


def _status_of(child: Child) -> ChildStatus:
    return ChildStatus(
        name=child.name,
        pid=child.pid,
        state=ChildState.RUNNING if child.proc.returncode is None else ChildState.RESTARTING,
        started_at=child.started_at.isoformat(),
        log=str(child.log_path),
    )


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def write_status(path: Path, statuses: Sequence[ChildStatus]) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps([asdict(s) for s in statuses], indent=2))
    tmp.replace(path)


def read_status(path: Path) -> list[ChildStatus]:
    """The children as the running stack last wrote them; [] when there is no file."""
    try:
        rows = json.loads(path.read_text())
        return [ChildStatus(**row) for row in rows]
    except (OSError, ValueError, TypeError):
        return []
