"""The event loop every agentkeel process runs on: asyncio's own, or uvloop if asked.

A worker spends most of its CPU in the event loop and the SDK's hand-offs, not in
agentkeel's code: a profile of the CPU worker under `bench.load` puts about half of its
samples in asyncio's scheduling, selector and thread hand-offs (each workflow activation
runs on the SDK's thread pool and comes back through `call_soon_threadsafe`), 2.5 % in
agentkeel. uvloop (libuv) does that bookkeeping in C, so it is offered
(`AGENTKEEL_EVENT_LOOP=uvloop`, or `auto`: uvloop where it is installed). Measured on this
project's 2-core machine (`bench.load --loop asyncio uvloop`, `docs/benchmarks.md`) it made
no difference beyond the noise between invocations: the worker is bound by activations on
the GIL, not by the loop. So asyncio's stays the default. Workflow code is unaffected
either way: workflows run on the SDK's own deterministic loop.
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
    Windows build, and agentkeel does not depend on it), asyncio's own otherwise.

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


def run(main: Coroutine[Any, Any, T], choice: EventLoop = "asyncio") -> T:
    """`asyncio.run(main)` on the loop `choice` names (see `chosen_loop`)."""
    if chosen_loop(choice) == "asyncio":
        return asyncio.run(main)
    import uvloop

    return uvloop.run(main)
