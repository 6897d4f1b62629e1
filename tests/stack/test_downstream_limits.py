"""Global caps on the downstream services with expiring leases, on real Redis: across
limiters, per tenant, after a crash, under cancellation, and rates."""

from __future__ import annotations

import asyncio
import time

import redis.asyncio as aioredis

from agentkeel.activities.downstream.limiter import DownstreamLimiter
from agentkeel.schemas.tools.downstreams import DownstreamLimit
from tests.support.concurrency import Gauge


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
