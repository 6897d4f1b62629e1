"""One tenant's index in `SemanticIndex`, and how changes to it meet searches.

FAISS releases the GIL: a search must never run beside a change made in a worker thread.
Every search and change holds the tenant's lock, and a change that may rebuild an HNSW
graph runs in a thread (the event loop goes on) while searches answer nothing meanwhile.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from agentkeel.activities.cache.semantic.vectors import VectorIndex

T = TypeVar("T")

THREADED_SEARCH_MIN = 20_000
"""Entries above which a search runs in a worker thread (below, it takes well under 1 ms)."""

INLINE_GRAPH_ADDS = 16
"""Entries added to an HNSW graph inline (well under a millisecond each); more go to a thread."""


@dataclass
class _Tenant:
    index: VectorIndex
    lock: asyncio.Lock
    """Held by every search and every change: FAISS releases the GIL, so a search must
    never run beside a change made in a worker thread (see `VectorIndex`)."""
    changing_in_thread: bool = False
    """A change runs in a worker thread (it may be rebuilding the graph, for seconds):
    searches meanwhile answer nothing, a miss, rather than wait."""


async def _mutate(target: _Tenant, adding: int, change: Callable[..., T], *args: Any) -> T:
    """Apply `change` to a tenant's index, its lock held by the caller: inline while the
    index is small and exact, else in a worker thread, where a change may rebuild an HNSW
    graph for seconds (the event loop, and every other activity of the worker, goes on).

    A cancelled caller still waits for the thread before the lock is released: a change
    half done in a thread must never meet a search."""
    index = target.index
    small_and_exact = not index.approximate and len(index) + adding < THREADED_SEARCH_MIN
    few_into_the_graph = index.approximate and 0 < adding <= INLINE_GRAPH_ADDS  # no rebuild
    if small_and_exact or few_into_the_graph:
        return change(*args)
    target.changing_in_thread = True
    running = asyncio.ensure_future(asyncio.to_thread(change, *args))
    try:
        return await asyncio.shield(running)
    except asyncio.CancelledError:
        await asyncio.wait([running])
        raise
    finally:
        if running.done():
            target.changing_in_thread = False
