"""The local stack's watchdog on real processes: a killed child comes back, a child that
keeps dying is left down and reported."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from collections.abc import Callable
from pathlib import Path

from agentkeel.cli.stack.procs import Child, start_child, stop_child
from agentkeel.cli.stack.watchdog import ChildState, Watchdog, read_status

SLEEPER = [sys.executable, "-c", "import time; time.sleep(120)"]
CRASHER = [sys.executable, "-c", "raise SystemExit(3)"]


async def _until(check: Callable[[], bool], timeout_s: float = 20.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout_s
    while not check():
        assert asyncio.get_running_loop().time() < deadline, "condition not reached in time"
        await asyncio.sleep(0.05)


async def test_a_killed_child_is_restarted_and_the_restart_recorded(tmp_path: Path) -> None:
    child = await start_child("worker cpu", SLEEPER, tmp_path)
    restarted: list[int] = []
    watchdog = Watchdog(
        [child],
        tmp_path / "status.json",
        on_restart=lambda c: restarted.append(c.pid),
        backoff_s=(0.05,),
    )
    watchdog.start()
    first_pid = child.pid
    try:
        os.kill(first_pid, signal.SIGKILL)
        await _until(lambda: bool(restarted))
        assert child.pid != first_pid and child.proc.returncode is None
        [status] = read_status(tmp_path / "status.json")
        assert status.state == ChildState.RUNNING
        assert status.pid == child.pid and status.restarts == 1
        assert status.last_exit is not None and status.last_exit.startswith("signal SIGKILL")
    finally:
        await watchdog.stop()
        await stop_child(child)
    assert read_status(tmp_path / "status.json")[0].state == ChildState.STOPPED


async def test_a_child_that_keeps_crashing_is_reported_not_looped(tmp_path: Path) -> None:
    child: Child = await start_child("carrier", CRASHER, tmp_path)
    watchdog = Watchdog(
        [child], tmp_path / "status.json", backoff_s=(0.01,), give_up_after=3, crash_window_s=60
    )
    watchdog.start()
    try:
        await _until(
            lambda: any(s.state == ChildState.FAILED for s in read_status(tmp_path / "status.json"))
        )
        [status] = read_status(tmp_path / "status.json")
        assert status.restarts == 3, "restarted up to the limit, then left down"
        assert status.last_exit is not None and status.last_exit.startswith("code 3")
        await asyncio.sleep(0.2)
        assert read_status(tmp_path / "status.json")[0].restarts == 3, "no restart after giving up"
    finally:
        await watchdog.stop()
    assert read_status(tmp_path / "status.json")[0].state == ChildState.FAILED
