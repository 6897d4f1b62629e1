"""Protecting the downstream services: global caps with expiring leases, shared reads,
merged calls — the parts on real Redis, the whole on the real stack and carrier service."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Sequence
from typing import Any

import httpx
import pytest
import redis.asyncio as aioredis
from temporalio import activity

from agentkeel.activities.downstream.batching import Batcher
from agentkeel.activities.downstream.guard import shared_tool
from agentkeel.activities.downstream.limiter import DownstreamLimiter
from agentkeel.activities.downstream.sharing import SharedReads
from agentkeel.examples.shop.carrier import serving
from agentkeel.examples.shop.domain import domain as _shop
from agentkeel.examples.shop.tools import GET_ORDER, GetOrderInput
from agentkeel.schemas import errors, names
from agentkeel.schemas.actor import Actor
from agentkeel.schemas.progress import RunProgress
from agentkeel.schemas.result import StepStatus
from agentkeel.schemas.tools.downstreams import DownstreamLimit
from agentkeel.settings.model import Settings, SettingsError
from tests.support.agent_stack import StackFactory
from tests.support.fakes import FakeScriptedPolicy

DOWNSTREAMS = {d.name: d for d in _shop.downstreams}


class Gauge:
    def __init__(self) -> None:
        self.now = 0
        self.peak = 0

    async def hold(self, seconds: float) -> None:
        self.now += 1
        self.peak = max(self.peak, self.now)
        try:
            await asyncio.sleep(seconds)
        finally:
            self.now -= 1


async def test_a_cap_holds_across_limiters_sharing_redis(redis: aioredis.Redis) -> None:
    namespace = f"t{time.monotonic_ns()}"
    limits = {"carrier": DownstreamLimit(concurrency=3)}
    workers = [DownstreamLimiter(redis, limits, namespace=namespace) for _ in range(3)]
    gauge = Gauge()

    async def call(limiter: DownstreamLimiter) -> float:
        async with limiter.slot("carrier", lease_s=10) as waited:
            await gauge.hold(0.05)
            return waited

    waits = await asyncio.gather(*(call(workers[i % 3]) for i in range(15)))
    assert gauge.peak == 3  # three "workers", one cap
    assert max(waits) > 0.05  # some calls waited for a slot


async def test_one_tenant_holds_at_most_its_share_and_another_finds_a_slot(
    redis: aioredis.Redis,
) -> None:
    namespace = f"t{time.monotonic_ns()}"
    limits = {"carrier": DownstreamLimit(concurrency=4)}
    limiter = DownstreamLimiter(redis, limits, namespace=namespace, tenant_share=0.5)

    async def call(tenant: str, gauge: Gauge) -> float:
        async with limiter.slot("carrier", lease_s=10, tenant=tenant) as waited:
            await gauge.hold(0.1)
            return waited

    alone = Gauge()
    await asyncio.gather(*(call("busy", alone) for _ in range(8)))
    assert alone.peak == 4  # alone, a tenant uses the whole cap
    busy, quiet = Gauge(), Gauge()
    quiet_calls = [asyncio.ensure_future(call("quiet", quiet)) for _ in range(2)]
    flood = [asyncio.ensure_future(call("busy", busy)) for _ in range(12)]
    quiet_waits = await asyncio.gather(*quiet_calls)
    await asyncio.gather(*flood)
    assert busy.peak == 2  # while another tenant calls too: its half of the cap
    assert quiet.peak == 2 and max(quiet_waits) < 0.25  # the other half stays free


async def test_leases_of_a_crashed_worker_expire_and_free_the_cap(redis: aioredis.Redis) -> None:
    namespace = f"t{time.monotonic_ns()}"
    limits = {"carrier": DownstreamLimit(concurrency=2)}
    crashed = DownstreamLimiter(redis, limits, namespace=namespace)
    for _ in range(2):  # taken and never given back: the process died holding them
        keys = crashed._keys("carrier", "default")
        assert await crashed._lease(keys, "carrier", limits["carrier"], 0.5, _nothing) is not None
    alive = DownstreamLimiter(redis, limits, namespace=namespace)
    started = time.monotonic()
    async with alive.slot("carrier", lease_s=10) as waited:
        assert 0.3 < waited < 3
    assert time.monotonic() - started < 3


async def _nothing() -> None:
    pass


async def test_a_call_cancelled_while_waiting_or_holding_leaves_no_lease(
    redis: aioredis.Redis,
) -> None:
    namespace = f"t{time.monotonic_ns()}"
    limits = {"carrier": DownstreamLimit(concurrency=1)}
    limiter = DownstreamLimiter(redis, limits, namespace=namespace)
    holding = asyncio.Event()

    async def hold() -> None:
        async with limiter.slot("carrier", lease_s=30):
            holding.set()
            await asyncio.sleep(30)

    holder = asyncio.ensure_future(hold())
    await holding.wait()
    waiter = asyncio.ensure_future(hold())  # waits: the cap is 1
    await asyncio.sleep(0.1)
    for task in (waiter, holder):
        task.cancel()
    await asyncio.gather(holder, waiter, return_exceptions=True)
    leases, _, tenant_leases, _ = limiter._keys("carrier", "default")
    assert await redis.zcard(leases) == 0 and await redis.zcard(tenant_leases) == 0


async def test_a_rate_below_one_per_second_spaces_starts_out(redis: aioredis.Redis) -> None:
    slow = DownstreamLimiter(
        redis, {"carrier": DownstreamLimit(rate=0.5)}, namespace=f"s{time.monotonic_ns()}"
    )
    started = time.monotonic()
    for _ in range(2):
        async with slow.slot("carrier", lease_s=10):
            pass
    assert time.monotonic() - started >= 1.9  # one start per 2 s


async def test_a_batch_answering_the_wrong_count_fails_every_call_at_once() -> None:
    async def short(skus: Sequence[str]) -> list[Any]:
        return [s.lower() for s in skus[:-1]]

    batcher: Batcher[str, str] = Batcher(short, window_s=0.01)
    results = await asyncio.wait_for(
        asyncio.gather(*(batcher.call(s) for s in "ABC"), return_exceptions=True), 2
    )
    assert all(isinstance(r, RuntimeError) for r in results)
    assert len({id(r) for r in results}) == 3  # each caller its own exception


async def test_a_rate_spreads_starts_over_time(redis: aioredis.Redis) -> None:
    limiter = DownstreamLimiter(
        redis, {"carrier": DownstreamLimit(rate=5)}, namespace=f"t{time.monotonic_ns()}"
    )
    started = time.monotonic()

    async def call() -> None:
        async with limiter.slot("carrier", lease_s=10):
            pass

    await asyncio.gather(*(call() for _ in range(11)))
    assert time.monotonic() - started >= 1.5  # 5 per second: 11 starts span two seconds


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


# -- the real stack ------------------------------------------------------------------------


@pytest.fixture
async def slow_carrier() -> AsyncIterator[str]:
    """A carrier service of this test's own (its `/stats` count only this test's calls)."""
    async with serving(300) as url:
        yield url


async def carrier_stats(url: str) -> dict[str, int]:
    async with httpx.AsyncClient() as http:
        stats: dict[str, int] = (await http.get(f"{url}/stats")).json()
        return stats


def tracking_plan(number: str) -> dict[str, Any]:
    return {"steps": [{"id": "s1", "tool": "track_shipment", "args": {"tracking_number": number}}]}


async def shown_waiting_for_a_slot(handles: list[Any]) -> bool:
    """Whether some run's `progress` shows a call waiting for a carrier slot meanwhile."""
    for _ in range(60):
        # All runs at once: one pass stays well inside the waits even on a loaded machine.
        views = await asyncio.gather(
            *(h.query(names.PROGRESS_QUERY, result_type=RunProgress) for h in handles)
        )
        for progress in views:
            if any("carrier slot" in w.what and w.until is None for w in progress.waiting):
                return True
        await asyncio.sleep(0.05)
    return False


async def test_twenty_runs_never_put_more_than_the_cap_on_the_carrier(
    make_stack: StackFactory, slow_carrier: str
) -> None:
    stack = await make_stack(
        carrier_url=slow_carrier,
        downstream={"carrier_concurrency": "4"},
        merge_window_ms=0,
        share_reads="off",
        # Calls on the task queue: a local read's wait for a slot is shown once the
        # workflow task that awaits it completes, which is after the wait.
        local_tools="off",
    )
    numbers = [f"TRK{n:010d}" for n in range(5000, 5020)]
    handles = [await stack.start(f"where is parcel {n}?") for n in numbers]
    seen_waiting = await shown_waiting_for_a_slot(handles)
    results = await asyncio.wait_for(asyncio.gather(*(h.result() for h in handles)), 60)
    assert seen_waiting, "no run showed a call waiting for a carrier slot in progress"
    assert all(any(s.tool == "track_shipment" for s in r.steps) for r in results)
    stats = await carrier_stats(slow_carrier)
    print(f"carrier with a cap of 4 under 20 runs: {stats}")
    assert stats["requests"] == 20 and stats["peak_concurrency"] <= 4
    tracked = [next(s for s in r.steps if s.tool == "track_shipment") for r in results]
    queued = [s for s in tracked if s.queued_ms > 0]
    assert queued, "no call reported waiting for a carrier slot"
    for step in queued:  # queue time is part of the step's time, apart from the call's work
        assert step.started_at is not None and step.finished_at is not None
        assert step.queued_ms <= (step.finished_at - step.started_at).total_seconds() * 1000


async def test_identical_concurrent_reads_reach_the_carrier_once(
    make_stack: StackFactory, slow_carrier: str
) -> None:
    stack = await make_stack(carrier_url=slow_carrier, merge_window_ms=0)
    handles = [
        await stack.start("where is parcel TRK0000001001?", options={"use_cache": False})
        for _ in range(8)
    ]
    results = await asyncio.wait_for(asyncio.gather(*(h.result() for h in handles)), 60)
    assert all(r.steps[-1].status is StepStatus.SUCCEEDED for r in results)
    stats = await carrier_stats(slow_carrier)
    print(f"8 identical concurrent reads: {stats}")
    assert stats["requests"] <= 2  # one, unless a run came after the first read returned


async def test_merged_stock_checks_answer_each_step_and_an_unknown_sku_fails_alone(
    make_stack: StackFactory,
) -> None:
    skus = ["SKU-00001", "SKU-99999", "SKU-00002", "SKU-00003"]
    plan = {
        "steps": [
            {"id": f"s{i}", "tool": "check_inventory", "args": {"sku": sku}}
            for i, sku in enumerate(skus, 1)
        ]
    }
    stack = await make_stack(policy=FakeScriptedPolicy([plan]), merge_window_ms=20)
    result = await stack.ask("stock of four", options={"max_replans": 0, "use_cache": False})
    by_id = {s.id: s for s in result.steps}
    for i, sku in enumerate(skus, 1):
        step = by_id[f"s{i}"]
        if sku == "SKU-99999":
            assert step.status is StepStatus.FAILED
            assert step.error is not None and step.error.type == errors.NOT_FOUND
        else:
            assert step.status is StepStatus.SUCCEEDED and step.output["sku"] == sku


async def test_merged_tracking_checks_each_callers_authority(
    make_stack: StackFactory, slow_carrier: str
) -> None:
    """Parcels of two customers merged into one carrier request: each sees only its own."""
    stack = await make_stack(carrier_url=slow_carrier, merge_window_ms=200, share_reads="off")
    question = "where is parcel TRK0000001001?"  # order 1001's, customer 1's
    handles = await asyncio.gather(
        stack.start(question, actor=Actor(role="customer", subject=str(1))),
        stack.start(question, actor=Actor(role="customer", subject=str(2))),
    )
    mine, theirs = await asyncio.gather(*(h.result() for h in handles))
    # One carrier request carried the parcel the first customer may see; the second was
    # refused before anything was asked.
    assert (await carrier_stats(slow_carrier))["requests"] == 1
    assert mine.steps[-1].status is StepStatus.SUCCEEDED
    refused = theirs.steps[-1]
    assert refused.status is StepStatus.FAILED and refused.error is not None
    assert refused.error.type in (errors.NOT_FOUND, errors.NOT_AUTHORIZED)
