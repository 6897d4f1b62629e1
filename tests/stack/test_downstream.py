"""Protecting the downstream services on the real stack and carrier service: the cap under
twenty runs, shared reads, merged stock and tracking checks."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import asyncpg
import httpx
import pytest

from agentkeel.examples.shop.carrier import serving
from agentkeel.schemas import errors, names
from agentkeel.schemas.actor import Actor
from agentkeel.schemas.progress import RunProgress
from agentkeel.schemas.result import StepStatus
from tests.support.agent_stack import StackFactory
from tests.support.fakes import FakeScriptedPolicy

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


async def parcels_of(db: asyncpg.Pool, tenant: str, count: int) -> list[str]:
    rows = await db.fetch(
        "SELECT tracking_number FROM shipments WHERE tenant = $1 ORDER BY tracking_number LIMIT $2",
        tenant,
        count,
    )
    assert len(rows) == count, f"the seed has {len(rows)} parcels for {tenant}"
    return [r["tracking_number"] for r in rows]


async def test_twenty_runs_never_put_more_than_the_cap_on_the_carrier(
    make_stack: StackFactory, slow_carrier: str, db: asyncpg.Pool
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
    # Parcels of this stack's tenant: the shop tracks no other tenant's (nor unknown ones).
    numbers = await parcels_of(db, stack.tenant, 20)
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
