"""The tool-result cache writes its entry behind the call, on real Redis: the caller has its
value before the write lands, a read of the same key in the process waits for that write,
and a write that fails costs only a later read of the source."""

from __future__ import annotations

import asyncio
import uuid
from dataclasses import replace
from datetime import timedelta
from typing import Any

from agentkeel.activities.cache.backend import CacheBackend
from agentkeel.activities.cache.tool_results import ToolResultCache
from agentkeel.examples.shop.tools import KbResult, SearchKbArgs
from agentkeel.schemas.tools import TOOLS
from agentkeel.settings.connections import redis_client

SPEC = replace(TOOLS["search_kb"], cache_ttl=timedelta(minutes=1))


class HeldBackend(CacheBackend):
    """A real backend whose entry writes wait for `release` (or fail, with `broken`)."""

    def __init__(self, *args: Any, broken: bool = False, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.release = asyncio.Event()
        self.broken = broken
        self.puts = 0

    async def put(self, *args: Any, **kwargs: Any) -> bool:
        self.puts += 1
        await self.release.wait()
        if self.broken:
            raise RuntimeError("the write failed")
        return await super().put(*args, **kwargs)


def counting() -> tuple[list[str], Any]:
    calls: list[str] = []

    async def compute(args: SearchKbArgs) -> KbResult:
        calls.append(args.query)
        return KbResult(query=f"{args.query}#{len(calls)}", hits=[])

    return calls, compute


async def test_the_caller_has_its_value_before_the_entry_is_written(redis_url: str) -> None:
    client = redis_client(redis_url)
    backend = HeldBackend(client, index_ttl=timedelta(minutes=1))
    cache = ToolResultCache(backend)
    calls, compute = counting()
    args = SearchKbArgs(query=f"behind-{uuid.uuid4().hex}")
    try:
        first = await asyncio.wait_for(cache.get_or_compute(SPEC, args, compute), timeout=5)
        assert first.query.endswith("#1"), "returned while its entry's write is still held"
        assert backend.puts == 1
        again = asyncio.create_task(cache.get_or_compute(SPEC, args, compute))
        await asyncio.sleep(0.1)
        assert not again.done(), "a read of the same key waits for the write under way"
        backend.release.set()
        second = await asyncio.wait_for(again, timeout=5)
        assert second.query.endswith("#1"), "and then finds the entry"
        assert len(calls) == 1, "the source was read once"
    finally:
        backend.release.set()
        await cache.close()
        await client.aclose()


async def test_a_write_that_fails_costs_only_a_later_read_of_the_source(redis_url: str) -> None:
    client = redis_client(redis_url)
    backend = HeldBackend(client, index_ttl=timedelta(minutes=1), broken=True)
    backend.release.set()
    cache = ToolResultCache(backend)
    calls, compute = counting()
    args = SearchKbArgs(query=f"behind-broken-{uuid.uuid4().hex}")
    try:
        assert (await cache.get_or_compute(SPEC, args, compute)).query.endswith("#1")
        assert (await cache.get_or_compute(SPEC, args, compute)).query.endswith("#2")
        assert len(calls) == 2, "nothing was cached, so the source was read again"
    finally:
        await cache.close()
        await client.aclose()


async def test_closing_waits_for_the_entries_still_being_written(redis_url: str) -> None:
    client = redis_client(redis_url)
    backend = HeldBackend(client, index_ttl=timedelta(minutes=1))
    cache = ToolResultCache(backend)
    calls, compute = counting()
    args = SearchKbArgs(query=f"behind-close-{uuid.uuid4().hex}")
    try:
        await cache.get_or_compute(SPEC, args, compute)
        closing = asyncio.create_task(cache.close())
        await asyncio.sleep(0.05)
        assert not closing.done(), "a closing worker waits for the write under way"
        backend.release.set()
        await asyncio.wait_for(closing, timeout=5)
        fresh = ToolResultCache(CacheBackend(client, index_ttl=timedelta(minutes=1)))
        assert (await fresh.get_or_compute(SPEC, args, compute)).query.endswith("#1")
        assert len(calls) == 1, "the entry was written before the close returned"
    finally:
        backend.release.set()
        await client.aclose()
