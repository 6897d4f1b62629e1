"""The latency book against real Redis: samples kept newest first, bounded, group-committed."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest
import redis.asyncio as aioredis

from agentkeel.activities.latency import KEY_PREFIX, SAMPLES_KEPT, LatencyBook
from agentkeel.schemas.deadline import LatencyEstimatesInput


async def _settled(book: LatencyBook) -> None:
    async with asyncio.timeout(1.0):  # the book never wrote its samples, otherwise
        await book.flush()


async def test_a_burst_of_samples_is_a_few_writes_and_keeps_the_newest_first(
    redis: aioredis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    book, scope = LatencyBook(redis), f"test-{uuid.uuid4().hex[:8]}"
    writes = 0
    real_pipeline = redis.pipeline

    def counted_pipeline(*args: Any, **kwargs: Any) -> Any:
        nonlocal writes
        writes += 1
        return real_pipeline(*args, **kwargs)

    monkeypatch.setattr(redis, "pipeline", counted_pipeline)
    for n in range(200):  # no await between: one busy worker's samples
        book.observe(scope, "tool:get_order", float(n))
    await _settled(book)
    # The writer starts when the loop next turns, by which time all 200 wait: one write.
    assert writes == 1
    key = f"{KEY_PREFIX}:{scope}:tool:get_order"
    kept = [float(v) for v in await redis.lrange(key, 0, -1)]
    assert kept == [float(n) for n in range(199, 199 - SAMPLES_KEPT, -1)]
    assert 0 < await redis.ttl(key)


async def test_samples_observed_during_a_write_are_read_back(redis: aioredis.Redis) -> None:
    book, scope = LatencyBook(redis), f"test-{uuid.uuid4().hex[:8]}"
    book.observe(scope, "tool:get_order", 10.0)
    await asyncio.sleep(0)  # the first write is in flight
    book.observe(scope, "tool:get_order", 30.0)
    book.observe(scope, "respond:light", 100.0)
    await _settled(book)
    estimates = await book.read(scope, LatencyEstimatesInput(tools=["get_order"]))
    assert estimates.source == "measured"
    assert estimates.tools["get_order"].samples == 2
    assert estimates.tools["get_order"].p50_ms == pytest.approx(20.0)
    assert estimates.models["respond:light"].samples == 1
