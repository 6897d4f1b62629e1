"""The tool-result cache without a Redis: its circuit breaker, what a dead Redis costs, and
the entities found in a result."""

from __future__ import annotations

import time
from datetime import timedelta

import pytest

from agentkeel.activities.cache.backend import CacheBackend, CacheUnavailable
from agentkeel.activities.cache.breaker import CircuitBreaker
from agentkeel.activities.cache.entities import entities_in
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
