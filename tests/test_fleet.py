"""A fleet on one machine: two CPU workers and two inference workers, each its own process,
against one Temporal, one Postgres and one Redis (`cli.stack.fleet`).

Runs spread over both workers of each kind; a path one worker stored is served by the
other; a SIGKILL of one worker of each kind while runs are in flight loses no run and
repeats no refund. The cap on model calls across inference workers is tested beside it,
with two inference workers' slots in this process. The semantic tier and the downstream
caps across CPU worker processes: `tests/test_fleet_shared.py`.
"""

from __future__ import annotations

import asyncio
import signal
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import asyncpg
import pytest
import redis.asyncio as aioredis
from temporalio.client import Client, WorkflowHandle

from agentkeel.activities.model_slots import ModelSlots
from agentkeel.cli.stack.fleet import WorkerFleet
from agentkeel.schemas.actor import Actor
from agentkeel.schemas.request import AgentRequest, RunOptions
from agentkeel.schemas.result import AgentResult, CacheStatus, StepStatus
from agentkeel.settings.ports import free_port
from agentkeel.workers.readiness import health_endpoint
from agentkeel.workers.worker import GRACEFUL_SHUTDOWN
from agentkeel.workflows.agent import AgentWorkflow
from tests.support.fleet_stack import fleet_env, fleet_settings, identities
from tests.support.pg import hand_shop_to

STAFF = Actor(role="staff", name="fleet")
DONE = (StepStatus.SUCCEEDED, StepStatus.SKIPPED)
"""A step that ran, or was skipped as its plan said (no tracking number: nothing to track)."""
KB_QUESTION = "What is your return policy for damaged items?"


@pytest.fixture
async def fleet(
    client: Client, database_url: str, redis_url: str, carrier_url: str, tmp_path: Path
) -> AsyncIterator[WorkerFleet]:
    settings = fleet_settings(
        client,
        database_url,
        redis_url,
        "fleet",
        local_policy="off",  # every policy step goes to the inference pool
        semantic_cache="off",
        model_concurrency=4,
    )
    workers = WorkerFleet(settings, fleet_env(settings, carrier_url), tmp_path)
    workers.start("cpu", 2)
    workers.start("inference", 2)
    try:
        await workers.wait_polling(client)
        yield workers
    finally:
        workers.stop()


async def test_two_workers_of_each_kind_share_runs_paths_and_survive_a_kill(
    client: Client, fleet: WorkerFleet, database_url: str
) -> None:
    tenant = f"tenant-{fleet.settings.task_queue}"
    await hand_shop_to(database_url, tenant)
    assert all([await w.ready() for w in fleet.workers]), "each worker says it is ready"

    async def start(question: str, **fields: Any) -> WorkflowHandle[Any, AgentResult]:
        request = AgentRequest(question=question, tenant=tenant, actor=STAFF, **fields)
        return await client.start_workflow(
            AgentWorkflow.run,
            request,
            id=f"fleet-{uuid.uuid4().hex[:12]}",
            task_queue=fleet.settings.task_queue,
        )

    # Runs spread: both workers of each kind take part.
    no_cache = RunOptions(use_cache=False)
    spread = [await start(f"Where is order {1001 + n}?", options=no_cache) for n in range(8)]
    for handle in spread:
        steps = (await handle.result()).steps
        assert all(s.status in DONE for s in steps), steps
    seen = {fleet.owner(i) for h in spread for i in await identities(h)}
    assert set(fleet.workers) <= seen, "each of the four workers served part of the runs"

    # A path stored through one CPU worker ...
    stored = await start(KB_QUESTION)
    assert (await stored.result()).cache == CacheStatus.MISS
    storer = fleet.owner((await identities(stored))[-1])
    assert storer is not None and storer.kind == "cpu"

    # ... survives that worker's SIGKILL, with an inference worker's, while refunds run.
    db = await asyncpg.connect(database_url)
    try:
        orders = [
            r["order_id"]
            for r in await db.fetch(
                "SELECT order_id FROM orders WHERE status <> 'cancelled' AND total_cents >= 500 "
                "ORDER BY order_id LIMIT 6"
            )
        ]
        refunds = [
            await start(f"Refund $1.00 for order {o}", request_id=f"fleet-refund-{o}")
            for o in orders
        ]
        await asyncio.sleep(0.5)  # in flight
        storer.kill()
        fleet.of_kind("inference")[0].kill()
        done = await asyncio.wait_for(asyncio.gather(*(h.result() for h in refunds)), timeout=120)
        for result in done:
            assert all(s.status in DONE for s in result.steps), result.steps
        per_order = await db.fetch(
            "SELECT order_id, count(*) AS n FROM refunds WHERE idempotency_key LIKE "
            "'%fleet-refund-%' GROUP BY order_id"
        )
    finally:
        await db.close()
    assert {r["order_id"]: r["n"] for r in per_order} == dict.fromkeys(orders, 1), (
        "each refund was made exactly once"
    )

    # The other CPU worker serves the path the killed one stored.
    served = await start(KB_QUESTION)
    assert (await served.result()).cache == CacheStatus.EXACT
    survivor = next(w for w in fleet.of_kind("cpu") if w is not storer)
    assert all(survivor.owns(i) for i in await identities(served))

    # SIGTERM drains: the worker turns unready at once, then exits within its grace period.
    survivor.process.send_signal(signal.SIGTERM)
    assert survivor.process.wait(GRACEFUL_SHUTDOWN.total_seconds() + 10) == 0
    assert not await survivor.ready()


async def test_the_health_endpoint_is_live_at_once_and_ready_only_when_told() -> None:
    address = f"127.0.0.1:{free_port()}"
    async with health_endpoint(address) as readiness:
        assert await _status(address, "/live") == 200
        assert await _status(address, "/ready") == 503, "loading: alive, not ready"
        readiness.ready = True
        assert await _status(address, "/ready") == 200
        assert await _status(address, "/other") == 404


async def _status(address: str, path: str) -> int:
    host, _, port = address.rpartition(":")
    reader, writer = await asyncio.open_connection(host, int(port))
    writer.write(f"GET {path} HTTP/1.0\r\n\r\n".encode())
    await writer.drain()
    line = await reader.readline()
    writer.close()
    return int(line.split()[1])


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
