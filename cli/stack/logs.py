"""`agentkeel logs [-f] [NAME]`: the local stack's logs, one file per process.

Each process `up` starts writes `<state_dir>/logs/<name>.log` (`temporal`, `worker-cpu`,
`gateway`, ...; `up.log` is the supervisor's own). Several files are shown interleaved
line by line, each line prefixed with its process, as `docker compose logs` does.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TextIO

FOLLOW_POLL_S = 0.25


class NoSuchLog(Exception):
    """No log matches the name asked for."""


def log_files(log_dir: Path) -> dict[str, Path]:
    """Process name -> its log file, in name order."""
    if not log_dir.is_dir():
        return {}
    return {path.stem: path for path in sorted(log_dir.glob("*.log"))}


def pick(files: dict[str, Path], name: str | None) -> dict[str, Path]:
    """All logs, or those of `name` (`worker-cpu`, or a part of it: `cpu`, `worker`)."""
    if name is None:
        return files
    wanted = name.replace(" ", "-")
    if wanted in files:
        return {wanted: files[wanted]}
    matching = {stem: path for stem, path in files.items() if wanted in stem}
    if not matching:
        known = ", ".join(files) or "none yet"
        raise NoSuchLog(f"no log named {name!r} (logs: {known})")
    return matching


def tail_lines(path: Path, lines: int) -> list[str]:
    """The last `lines` lines of `path` (read from the end, however large the file)."""
    if lines <= 0:
        return []
    with open(path, "rb") as f:
        f.seek(0, 2)
        end = f.tell()
        block, data = 8192, b""
        while end > 0 and data.count(b"\n") <= lines:
            start = max(0, end - block)
            f.seek(start)
            data = f.read(end - start) + data
            end = start
    return data.decode(errors="replace").splitlines()[-lines:]


def show(files: dict[str, Path], lines: int, out: TextIO) -> None:
    width = max((len(name) for name in files), default=0)
    for name, path in files.items():
        for line in tail_lines(path, lines):
            out.write(_prefixed(name, width, line, several=len(files) > 1))
    out.flush()


async def follow(files: dict[str, Path], out: TextIO, *, polls: int | None = None) -> None:
    """Print lines as they are appended, until cancelled (or after `polls` polls, for tests).
    A file that is truncated or replaced (a restarted stack) is read again from its start."""
    width = max((len(name) for name in files), default=0)
    offsets = {name: _size(path) for name, path in files.items()}
    partial = dict.fromkeys(files, "")
    done = 0
    while polls is None or done < polls:
        await asyncio.sleep(FOLLOW_POLL_S)
        done += 1
        for name, path in files.items():
            size = _size(path)
            if size < offsets[name]:
                offsets[name], partial[name] = 0, ""
            if size == offsets[name]:
                continue
            chunk = _read_range(path, offsets[name], size)
            offsets[name] = size
            text = partial[name] + chunk.decode(errors="replace")
            *complete, partial[name] = text.split("\n")
            for line in complete:
                out.write(_prefixed(name, width, line, several=len(files) > 1))
        out.flush()


def _read_range(path: Path, start: int, end: int) -> bytes:
    # A few lines at a time from a local file: not worth a thread.
    with open(path, "rb") as f:
        f.seek(start)
        return f.read(end - start)


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _prefixed(name: str, width: int, line: str, *, several: bool) -> str:
    return f"{name:<{width}} | {line}\n" if several else f"{line}\n"
