"""The event loop every agentkeel process runs on: uvloop where it is installed.

A worker spends most of its CPU in the event loop itself, not in agentkeel's code: a
profile of the CPU worker under `bench.load` puts about 50 % of its samples in asyncio's
scheduling, selector and thread hand-offs (each workflow activation runs on the SDK's
thread pool and comes back through `call_soon_threadsafe`), 2.5 % in agentkeel. uvloop
(libuv) does that bookkeeping in C: the same load costs the worker process about a
fifth less CPU per run (`bench.load --loop uvloop asyncio`, `docs/benchmarks.md`). The
Temporal workflow code is unaffected: workflows run on the SDK's own deterministic loop.
"""

from __future__ import annotations

import asyncio
import importlib.util
from collections.abc import Coroutine
from typing import Any, Literal, TypeVar, get_args

__all__ = ["EventLoop", "chosen_loop", "run"]

EventLoop = Literal["auto", "uvloop", "asyncio"]

T = TypeVar("T")


def chosen_loop(choice: EventLoop) -> Literal["uvloop", "asyncio"]:
    """The loop `choice` means here: `auto` is uvloop when it is installed (it has no
    Windows build), asyncio's own otherwise.

    Raises:
        ValueError: `choice` is not a loop name, or `uvloop` was asked for and is missing.
    """
    if choice not in get_args(EventLoop):
        raise ValueError(
            f"event loop must be one of {', '.join(get_args(EventLoop))}, got {choice!r}"
        )
    installed = importlib.util.find_spec("uvloop") is not None
    if choice == "uvloop" and not installed:
        raise ValueError("event loop uvloop was asked for, but uvloop is not installed")
    if choice == "asyncio" or not installed:
        return "asyncio"
    return "uvloop"


def run(main: Coroutine[Any, Any, T], choice: EventLoop = "auto") -> T:
    """`asyncio.run(main)` on the loop `choice` names (see `chosen_loop`)."""
    if chosen_loop(choice) == "asyncio":
        return asyncio.run(main)
    import uvloop

    return uvloop.run(main)
