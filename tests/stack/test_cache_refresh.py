"""Stale-while-revalidate of the tool-result cache, and an invalidation racing a read, on
real Redis."""

from __future__ import annotations

import asyncio
import time
import uuid
from dataclasses import replace
from datetime import timedelta

from agentkeel.activities.cache.backend import CacheBackend
from agentkeel.activities.cache.tool_results import ToolResultCache
from agentkeel.examples.shop.tools import KbResult, SearchKbArgs, SearchKbInput
from agentkeel.schemas.path_cache import tenant_tag
from agentkeel.schemas.tools import TOOLS
from agentkeel.settings.connections import redis_client


async def test_stale_value_is_served_while_a_refresh_runs(redis_url: str) -> None:
    client = redis_client(redis_url)
    cache = ToolResultCache(CacheBackend(client, index_ttl=timedelta(minutes=1)))
    spec = replace(TOOLS["search_kb"], cache_ttl=timedelta(milliseconds=300))
    calls: list[int] = []

    refreshed = asyncio.Event()

    async def compute(args: SearchKbArgs) -> KbResult:
        calls.append(len(calls) + 1)
        if len(calls) == 2:
            refreshed.set()
        return KbResult(query=f"{args.query}#{len(calls)}", hits=[])

    args = SearchKbArgs(query=f"swr-{uuid.uuid4().hex}")
    try:
        assert (await cache.get_or_compute(spec, args, compute)).query.endswith("#1")
        assert (await cache.get_or_compute(spec, args, compute)).query.endswith("#1")
        assert calls == [1], "fresh: served from the cache"
        await asyncio.sleep(0.35)
        stale = await cache.get_or_compute(spec, args, compute)
        assert stale.query.endswith("#1"), "stale is served at once..."
        await asyncio.wait_for(refreshed.wait(), timeout=10)
        assert calls == [1, 2], "...while one refresh runs in the background"
        for _ in range(100):  # its write lands a moment later; a busy machine may be slow
            latest = await cache.get_or_compute(spec, args, compute)
            if latest.query.endswith("#2"):
                break
            await asyncio.sleep(0.05)
        assert latest.query.endswith("#2")
        assert calls == [1, 2], "no second refresh for the same key"
    finally:
        await client.aclose()


async def test_stale_values_for_deadlines_only_serve_the_calls_that_trade_for_them(
    redis_url: str,
) -> None:
    client = redis_client(redis_url)
    backend = CacheBackend(client, index_ttl=timedelta(minutes=1))
    cache = ToolResultCache(backend, stale_for_deadlines_only=True)
    spec = replace(TOOLS["search_kb"], cache_ttl=timedelta(milliseconds=200))
    calls: list[int] = []

    async def compute(args: SearchKbInput) -> KbResult:
        calls.append(len(calls) + 1)
        return KbResult(query=f"{args.query}#{len(calls)}", hits=[])

    query = f"swr-deadline-{uuid.uuid4().hex}"
    try:
        await cache.get_or_compute(spec, SearchKbInput(query=query), compute)
        await asyncio.sleep(0.25)
        plain = await cache.get_or_compute(spec, SearchKbInput(query=query), compute)
        assert plain.query.endswith("#2"), "past its TTL: read from the source"
        await asyncio.sleep(0.25)
        traded = await cache.get_or_compute(
            spec, SearchKbInput(query=query, stale_ok=True), compute
        )
        assert traded.query.endswith("#2"), "a deadline's call takes the stale value at once"
    finally:
        await cache.close()
        await client.aclose()


async def test_a_value_read_before_an_invalidation_is_not_stored(redis_url: str) -> None:
    client = redis_client(redis_url)
    backend = CacheBackend(client, index_ttl=timedelta(minutes=1))
    entity = f"order_id:{uuid.uuid4().int % 10**9}"
    tenant = "t-units"
    key = f"agentkeel:test:{tenant_tag(tenant)}:{uuid.uuid4().hex}"
    try:
        read_at = time.time()
        # A refund lands while the value was being read.
        await backend.invalidate([entity], tenant=tenant)
        assert not await backend.put(
            key, "old", timedelta(seconds=30), [entity], tenant=tenant, read_since=read_at
        )
        assert await backend.get(key) is None
        assert await backend.put(
            key, "new", timedelta(seconds=30), [entity], tenant=tenant, read_since=time.time()
        )
        assert await backend.get(key) == b"new"
        assert await backend.invalidate([entity], tenant="another") == []
        assert await backend.invalidate([entity], tenant=tenant) == [key]
        assert await backend.get(key) is None
    finally:
        await client.delete(key)
        await client.aclose()
