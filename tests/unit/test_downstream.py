"""Protecting the downstream services within one process: a cap without Redis, shared reads,
merged calls, and their settings."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import pytest
from temporalio import activity

from agentkeel.activities.downstream.batching import Batcher
from agentkeel.activities.downstream.guard import shared_tool
from agentkeel.activities.downstream.limiter import DownstreamLimiter
from agentkeel.activities.downstream.sharing import SharedReads
from agentkeel.examples.shop.domain import domain as _shop
from agentkeel.examples.shop.tools import GET_ORDER, GetOrderInput
from agentkeel.schemas.tools.downstreams import DownstreamLimit
from agentkeel.settings.model import Settings, SettingsError
from tests.support.concurrency import Gauge

DOWNSTREAMS = {d.name: d for d in _shop.downstreams}


async def test_a_batch_answering_the_wrong_count_fails_every_call_at_once() -> None:
    async def short(skus: Sequence[str]) -> list[Any]:
        return [s.lower() for s in skus[:-1]]

    batcher: Batcher[str, str] = Batcher(short, window_s=0.01)
    results = await asyncio.wait_for(
        asyncio.gather(*(batcher.call(s) for s in "ABC"), return_exceptions=True), 2
    )
    assert all(isinstance(r, RuntimeError) for r in results)
    assert len({id(r) for r in results}) == 3  # each caller its own exception


async def test_without_redis_a_cap_holds_in_the_process() -> None:
    limiter = DownstreamLimiter(None, {"carrier": DownstreamLimit(concurrency=2)})
    gauge = Gauge()

    async def call() -> None:
        async with limiter.slot("carrier", lease_s=10):
            await gauge.hold(0.02)

    await asyncio.gather(*(call() for _ in range(6)))
    assert gauge.peak == 2


async def test_identical_reads_in_flight_share_one_fetch() -> None:
    shared = SharedReads()
    fetched: list[str] = []

    async def fetch(key: str) -> str:
        fetched.append(key)
        await asyncio.sleep(0.05)
        return key.upper()

    results = await asyncio.gather(
        *(shared.read(k, lambda k=k: fetch(k)) for k in ["a"] * 8 + ["b"] * 2)  # type: ignore[misc]
    )
    assert results == ["A"] * 8 + ["B"] * 2
    assert sorted(fetched) == ["a", "b"] and shared.shared == 8
    await shared.read("a", lambda: fetch("a"))  # the flight is over: read anew
    assert fetched.count("a") == 2


async def test_calls_within_the_window_merge_and_each_gets_its_own_result() -> None:
    requests: list[list[str]] = []

    async def many(skus: Sequence[str]) -> list[Any]:
        requests.append(list(skus))
        return [KeyError(s) if s == "unknown" else s.lower() for s in skus]

    batcher: Batcher[str, str] = Batcher(many, window_s=0.02)
    results = await asyncio.gather(
        *(batcher.call(s) for s in ["A", "B", "unknown", "C"]), return_exceptions=True
    )
    assert results[:2] == ["a", "b"] and results[3] == "c"
    assert isinstance(results[2], KeyError)
    assert requests == [["A", "B", "unknown", "C"]]


async def test_a_watch_read_never_joins_a_read_already_in_flight() -> None:
    fetched: list[bool] = []

    @activity.defn(name=GET_ORDER.name)
    async def read(args: GetOrderInput) -> Any:
        fetched.append(args.fresh)
        await asyncio.sleep(0.05)
        return {"order_id": args.order_id}

    shared = shared_tool(read, GET_ORDER, SharedReads())
    plain, watch = GetOrderInput(order_id=1002), GetOrderInput(order_id=1002, fresh=True)
    await asyncio.gather(shared(plain), shared(plain), shared(watch), shared(watch))
    assert sorted(fetched) == [False, True, True]  # the two plain reads shared one fetch


def test_downstream_settings_are_checked_by_name() -> None:
    limits = Settings.from_env(
        {"AGENTKEEL_DOWNSTREAM_CARRIER_CONCURRENCY": "4", "AGENTKEEL_DOWNSTREAM_CARRIER_RATE": "20"}
    ).downstream_limits(DOWNSTREAMS)
    assert limits["carrier"] == DownstreamLimit(concurrency=4, rate=20)
    defaults = Settings().downstream_limits(DOWNSTREAMS)
    assert defaults["carrier"].concurrency == 8  # the catalog's default
    for env in (
        {"AGENTKEEL_DOWNSTREAM_CARIER_CONCURRENCY": "4"},
        {"AGENTKEEL_DOWNSTREAM_CARRIER_CONCURRENCY": "-1"},
        {"AGENTKEEL_DOWNSTREAM_CARRIER_RATE": "fast"},
    ):
        with pytest.raises(SettingsError, match="AGENTKEEL_DOWNSTREAM_CAR"):
            Settings.from_env(env).downstream_limits(DOWNSTREAMS)
