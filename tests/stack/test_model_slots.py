"""The cap on model calls across inference workers: two workers' slots in this process, one
Redis between them."""

from __future__ import annotations

import asyncio
import uuid

import redis.asyncio as aioredis

from agentkeel.activities.model_slots import ModelSlots


async def test_model_calls_in_flight_stay_under_one_cap_across_inference_workers(
    redis_url: str,
) -> None:
    cap, namespace = 3, f"fleet-{uuid.uuid4().hex[:8]}"
    # Without the workers' half-second timeouts: on a busy machine a timeout would make a
    # worker hold the whole cap alone (the fallback without Redis), which is not under test.
    clients = [aioredis.from_url(redis_url), aioredis.from_url(redis_url)]
    # Two inference workers: each its own client and its own slots, one Redis between them.
    workers = [ModelSlots(c, cap, namespace=namespace, lease_s=30) for c in clients]
    in_flight = peak = 0

    async def call(slots: ModelSlots) -> None:
        nonlocal in_flight, peak
        async with slots.slot():
            in_flight += 1
            peak = max(peak, in_flight)
            await asyncio.sleep(0.05)
            in_flight -= 1

    try:
        await asyncio.wait_for(
            asyncio.gather(*(call(workers[n % 2]) for n in range(24))), timeout=30
        )
    finally:
        for c in clients:
            await c.aclose()
    assert peak == cap, f"{peak} calls were in flight at once; the fleet's cap is {cap}"
    uncapped = ModelSlots(None, 0, namespace=namespace, lease_s=30)
    async with uncapped.slot():
        pass  # no cap: no Redis needed, nothing waits
