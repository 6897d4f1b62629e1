"""The DAG scheduler without Temporal: eager dispatch, failures and what they skip, runtime
expansion, cancellation."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from agentkeel.schemas.result import StepStatus
from agentkeel.schemas.tools import TOOLS
from agentkeel.workflows.dag.calls import ToolCall
from agentkeel.workflows.dag.scheduler import DagScheduler
from agentkeel.workflows.dag.step_gates import SchedulerLimits
from tests.support.dag import Clock, _describe, plan, settle


async def test_eager_dispatch_does_not_wait_for_a_whole_level() -> None:
    """b depends only on a; it must start while the slow sibling c is still running."""
    started: list[str] = []
    release = {name: asyncio.Event() for name in ("a", "b", "c")}

    async def dispatch(call: ToolCall) -> Any:
        started.append(call.step_id)
        await release[call.step_id].wait()
        return {"order_id": 1001, "tracking_number": "TRK0000001001", "items": []}

    p = plan(
        {"id": "a", "tool": "get_order", "args": {"order_id": 1}},
        {"id": "c", "tool": "search_kb", "args": {"query": "slow"}},
        {"id": "b", "tool": "track_shipment", "args": {"tracking_number": "$a.tracking_number"}},
    )
    scheduler = DagScheduler(p, TOOLS, dispatch=dispatch, now=Clock(), describe_error=_describe)
    run = asyncio.create_task(scheduler.run())
    await settle()
    assert started == ["a", "c"]
    release["a"].set()
    await settle()
    assert started == ["a", "c", "b"], "b starts as soon as a is done, c still running"
    release["b"].set()
    release["c"].set()
    outcomes = await run
    assert [o.status for o in outcomes] == [StepStatus.SUCCEEDED] * 3
    assert outcomes[2].args == {"tracking_number": "TRK0000001001"}


async def test_failure_skips_transitive_dependants_only() -> None:
    async def dispatch(call: ToolCall) -> Any:
        if call.step_id == "a":
            raise RuntimeError("boom")
        return {"order_id": 1, "tracking_number": "T", "hits": [], "query": "q"}

    p = plan(
        {"id": "a", "tool": "get_order", "args": {"order_id": 1}},
        {"id": "b", "tool": "track_shipment", "args": {"tracking_number": "$a.tracking_number"}},
        {"id": "c", "tool": "search_kb", "args": {"query": "x"}, "after": ["b"]},
        {"id": "d", "tool": "search_kb", "args": {"query": "independent"}},
    )
    scheduler = DagScheduler(
        p,
        TOOLS,
        dispatch=dispatch,
        now=Clock(),
        describe_error=_describe,
        limits=SchedulerLimits(max_concurrency=2),
    )
    outcomes = {o.id: o for o in await scheduler.run()}
    assert outcomes["a"].status == StepStatus.FAILED
    assert outcomes["a"].error is not None and outcomes["a"].error.message == "boom"
    assert outcomes["b"].status == StepStatus.SKIPPED
    assert outcomes["c"].status == StepStatus.SKIPPED
    assert outcomes["d"].status == StepStatus.SUCCEEDED
    assert scheduler.max_observed_concurrency <= 2


async def test_empty_expansion_succeeds_with_no_calls() -> None:
    calls: list[str] = []

    async def dispatch(call: ToolCall) -> Any:
        calls.append(call.call_id)
        return {"order_id": 1, "items": []}

    p = plan(
        {"id": "a", "tool": "get_order", "args": {"order_id": 1}},
        {
            "id": "b",
            "tool": "check_inventory",
            "for_each": "$a.items",
            "args": {"sku": "$item.sku"},
        },
    )
    outcomes = await DagScheduler(
        p, TOOLS, dispatch=dispatch, now=Clock(), describe_error=_describe
    ).run()
    assert calls == ["a"]
    assert outcomes[1].status == StepStatus.SUCCEEDED and outcomes[1].output == []


async def test_failed_expansion_element_cancels_its_queued_siblings() -> None:
    calls: list[str] = []

    async def dispatch(call: ToolCall) -> Any:
        calls.append(call.call_id)
        if call.step_id == "a":
            return {"items": [{"sku": f"SKU-0000{i}"} for i in range(1, 7)]}
        if call.index == 0:
            raise RuntimeError("warehouse offline")
        await asyncio.sleep(0.01)
        return {"sku": call.args["sku"]}

    p = plan(
        {"id": "a", "tool": "get_order", "args": {"order_id": 1}},
        {
            "id": "b",
            "tool": "check_inventory",
            "for_each": "$a.items",
            "args": {"sku": "$item.sku"},
        },
    )
    scheduler = DagScheduler(
        p,
        TOOLS,
        dispatch=dispatch,
        now=Clock(),
        describe_error=_describe,
        limits=SchedulerLimits(max_concurrency=2),
    )
    outcomes = await scheduler.run()
    assert outcomes[1].status == StepStatus.FAILED
    assert outcomes[1].error is not None and "b[0]: warehouse offline" in outcomes[1].error.message
    assert len(calls) < 7, f"queued siblings ran after the failure: {calls}"


async def test_an_unexpected_error_ends_the_run_instead_of_failing_a_step() -> None:
    class Bug(Exception):
        pass

    async def dispatch(call: ToolCall) -> Any:
        raise Bug("not a tool failure")

    p = plan({"id": "a", "tool": "search_kb", "args": {"query": "x"}})
    scheduler = DagScheduler(
        p,
        TOOLS,
        dispatch=dispatch,
        now=Clock(),
        describe_error=_describe,
        step_failures=(RuntimeError,),
    )
    with pytest.raises(Bug):
        await asyncio.wait_for(scheduler.run(), timeout=2)


async def test_a_cancelled_run_cancels_calls_in_flight_and_keeps_what_finished() -> None:
    """A call that completes while its cancel is on the way (a refund that had committed)
    is recorded as done; one that was cancelled fails as `Cancelled`."""

    async def dispatch(call: ToolCall) -> Any:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            if call.step_id == "committed":
                return {"order_id": 1, "tracking_number": None, "items": []}
            raise
        raise AssertionError("never released")

    p = plan(
        {"id": "committed", "tool": "get_order", "args": {"order_id": 1}},
        {"id": "cut", "tool": "search_kb", "args": {"query": "slow"}},
    )
    scheduler = DagScheduler(p, TOOLS, dispatch=dispatch, now=Clock(), describe_error=_describe)
    run = asyncio.create_task(scheduler.run())
    await settle()
    run.cancel()
    with pytest.raises(asyncio.CancelledError):
        await run
    done, cut = scheduler.outcomes["committed"], scheduler.outcomes["cut"]
    assert done.status == StepStatus.SUCCEEDED and done.output["order_id"] == 1
    assert cut.status == StepStatus.FAILED and cut.error is not None
    assert cut.error.type == "Cancelled"
