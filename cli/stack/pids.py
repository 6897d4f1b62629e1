"""Pid files, process liveness, and the orphans a killed supervisor leaves behind."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import time
from collections.abc import Sequence
from pathlib import Path

from agentkeel.cli.stack.procs import Child, signal_group


def write_pid_file(path: Path, pid: int | None = None) -> None:
    """Write this process's (or `pid`'s) id to `path`, atomically."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(f"{os.getpid() if pid is None else pid}\n")
    tmp.replace(path)


def read_pid_file(path: Path) -> int | None:
    """The pid in `path` when the file exists and that process is alive, else None."""
    try:
        pid = int(path.read_text().strip())
    except (OSError, ValueError):
        return None
    return pid if pid_alive(pid) else None


def pid_alive(pid: int) -> bool:
    """True when `pid` runs (a zombie child of ours is reaped and counts as gone)."""
    with contextlib.suppress(ChildProcessError):
        if os.waitpid(pid, os.WNOHANG)[0] == pid:
            return False
    with contextlib.suppress(OSError, IndexError):
        # A zombie that nobody reaps (no init in some containers) has exited all the same.
        if Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0] == "Z":
            return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    return True


def record_children(path: Path, children: Sequence[Child]) -> None:
    """Remember the children so that a later supervisor can end them if this one is killed."""
    rows = [{"name": c.name, "pid": c.pid, "exe": _program(c.pid)} for c in children]
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(rows))
    tmp.replace(path)


def started_children(path: Path) -> list[str]:
    """The names of the children recorded in `path` so far (none when it is unreadable)."""
    try:
        return [str(row["name"]) for row in json.loads(path.read_text())]
    except (OSError, ValueError, TypeError, KeyError):
        return []


def kill_orphans(path: Path, timeout_s: float = 5.0) -> list[str]:
    """End the children recorded in `path` that still run the same program; return their names."""
    try:
        rows = json.loads(path.read_text())
    except (OSError, ValueError):
        return []
    ended = []
    for row in rows:
        pid = int(row["pid"])
        # A recycled pid runs another program: compare argv[0] before signalling.
        if pid_alive(pid) and row.get("exe") and _program(pid) == row["exe"]:
            signal_group(pid, signal.SIGTERM)
            deadline = time.monotonic() + timeout_s
            while pid_alive(pid) and time.monotonic() < deadline:
                time.sleep(0.05)
            signal_group(pid, signal.SIGKILL)
            ended.append(str(row["name"]))
    path.unlink(missing_ok=True)
    return ended


def _program(pid: int) -> str | None:
    # First word only: redis-server rewrites its argv[0] into a title once it runs.
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0].decode().split(" ")[0]
    except (OSError, UnicodeDecodeError):
        return None
