"""Circuit breaker, Redis degradation, and stale-while-revalidate of the tool-result cache."""

from __future__ import annotations

import asyncio
import time
import uuid
from dataclasses import replace
from datetime import timedelta

import pytest

from agentkeel.activities.cache.backend import CacheBackend, CacheUnavailable
from agentkeel.activities.cache.breaker import CircuitBreaker
from agentkeel.activities.cache.entities import entities_in
from agentkeel.activities.cache.slots import tenant_tag
from agentkeel.activities.cache.tool_results import ToolResultCache
from agentkeel.examples.shop.tools import KbResult, SearchKbArgs, SearchKbInput
from agentkeel.schemas.tools import TOOLS
from agentkeel.settings.connections import redis_client


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_a_cancelled_trial_does_not_keep_the_breaker_shut() -> None:
    clock = FakeClock()
    breaker = CircuitBreaker(reset_after_s=5, clock=clock)
    breaker.record_failure()
    clock.now = 6
    assert breaker.allow()
    breaker.release_trial()  # the trial call was cancelled before Redis answered
    assert breaker.allow(), "the next call may try again"


def test_breaker_opens_then_lets_one_trial_through() -> None:
    clock = FakeClock()
    breaker = CircuitBreaker(reset_after_s=5, clock=clock)
    assert breaker.allow()
    breaker.record_failure()
    assert not breaker.allow(), "open: no call reaches the dependency"
    clock.now = 5.1
    assert breaker.allow(), "half-open: one trial"
    assert not breaker.allow(), "only one trial at a time"
    breaker.record_success()
    assert breaker.allow() and not breaker.is_open


async def test_dead_redis_costs_one_timeout_then_fails_fast() -> None:
    backend = CacheBackend(redis_client("redis://127.0.0.1:1/0"), index_ttl=timedelta(minutes=1))
    with pytest.raises(CacheUnavailable):
        await backend.get("k")
    started = time.perf_counter()
    for _ in range(100):
        with pytest.raises(CacheUnavailable, match="circuit open"):
            await backend.get("k")
    assert time.perf_counter() - started < 0.05, "an open circuit never touches the network"


def test_entities_are_found_at_any_depth() -> None:
    found = entities_in(
        {"order_id": 1001, "items": [{"sku": "SKU-00001"}]},
        {"customer_id": 1, "order_ids": [1002, 1003], "email": "A@x.io"},
    )
    assert found == {
        "order_id:1001",
        "order_id:1002",
        "order_id:1003",
        "sku:sku-00001",
        "customer_id:1",
        "email:a@x.io",
    }


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
