"""A fleet on one machine: two CPU workers and two inference workers, each its own process,
against one Temporal, one Postgres and one Redis (`cli.stack.fleet`).

Runs spread over both workers of each kind; a path one worker stored is served by the
other; a SIGKILL of one worker of each kind while runs are in flight loses no run and
repeats no refund. The cap on model calls across inference workers:
`tests/stack/test_model_slots.py`; the semantic tier and the downstream caps across CPU
worker processes: `tests/fleet/test_fleet_shared.py`.
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
from temporalio.client import Client, WorkflowHandle

from agentkeel.cli.stack.fleet import WorkerFleet
from agentkeel.schemas.actor import Actor
from agentkeel.schemas.request import AgentRequest, RunOptions
from agentkeel.schemas.result import AgentResult, CacheStatus, StepStatus
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
