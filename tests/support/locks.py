"""A lock across the test processes (pytest-xdist's workers) for work done in one shared
place: the checkout's `build/` of a wheel build, the npm cache of the MCP servers."""

from __future__ import annotations

import fcntl
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

LOCKS = Path.home() / ".cache" / "agentkeel-tests" / "locks"


@contextmanager
def held(name: str) -> Iterator[None]:
    """Hold the machine-wide lock `name` until the block ends (released if the process dies)."""
    LOCKS.mkdir(parents=True, exist_ok=True)
    with (LOCKS / f"{name}.lock").open("w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
