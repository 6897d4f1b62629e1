"""The DAG scheduler inside AgentWorkflow, on the real dev server, Postgres and Redis."""

from __future__ import annotations

import asyncio
from datetime import datetime

import pytest

from agentkeel.schemas.progress import RunProgress
from agentkeel.schemas.request import RunOptions
from agentkeel.schemas.result import AgentResult, StepOutcome, StepStatus
from agentkeel.workflows.agent import AgentWorkflow
from tests.support.agent_stack import AgentStack, StackFactory
from tests.support.fakes import FakeScriptedPolicy
from tests.support.history import scheduled_activities
from tests.support.plans import SlowInventory, wide_plan


def step(result: AgentResult, step_id: str) -> StepOutcome:
    return next(s for s in result.steps if s.id == step_id)


def interval(s: StepOutcome) -> tuple[datetime, datetime]:
    assert s.started_at is not None and s.finished_at is not None, s
    return s.started_at, s.finished_at


def max_overlap(steps: list[StepOutcome]) -> int:
    """Most steps whose recorded [start, finish) intervals overlap at one instant."""
    events = []
    for s in steps:
        start, end = interval(s)
        events += [(start, 1), (end, -1)]
    current = peak = 0
    for _, delta in sorted(events, key=lambda e: (e[0], e[1])):  # ends before starts on ties
        current += delta
        peak = max(peak, current)
    return peak


async def test_independent_steps_overlap_in_time(stack: AgentStack) -> None:
    # The plan's own steps, not reads started from the question before it (a step served
    # by a twin that had finished shows no interval of its own).
    result = await stack.ask(
        "Is SKU-00001 in stock, and SKU-00002, and SKU-00003?", options={"speculate": False}
    )
    inventory = [s for s in result.steps if s.tool == "check_inventory"]
    assert len(inventory) == 3
    assert all(s.status == StepStatus.SUCCEEDED for s in inventory)
    latest_start = max(interval(s)[0] for s in inventory)
    earliest_finish = min(interval(s)[1] for s in inventory)
    assert latest_start < earliest_finish, "independent steps ran one after another"


@pytest.mark.smoke
async def test_dependent_step_waits_and_receives_resolved_value(stack: AgentStack) -> None:
    handle = await stack.start("Where is order 1001?")
    result = await handle.result()
    history = await handle.fetch_history()
    scheduled = scheduled_activities(history)
    # Every step here is a local activity, the read the question names included
    # (`local-speculation-v1`): nothing went through a task queue.
    assert not [e for e in history.events if e.HasField("activity_task_scheduled_event_attributes")]
    # The order the question names is read from the run's first moment, beside the route
    # (speculation: here, where the worker serves the rules and the reads, both local
    # activities, recorded as each finishes), and the plan's step takes it. A clean run
    # needs no model to judge it: join finishes inline, without an activity.
    assert sorted(scheduled[:2]) == ["get_order", "route"]
    assert scheduled[2:] == ["track_shipment", "respond"]
    order, tracking = step(result, "s1"), step(result, "s2")
    assert order.speculative and not tracking.speculative
    assert order.tool == "get_order" and tracking.tool == "track_shipment"
    assert interval(tracking)[0] >= interval(order)[1]
    assert tracking.args == {"tracking_number": order.output["tracking_number"]}
    assert tracking.args["tracking_number"] == "TRK0000001001"
    assert tracking.output["tracking_number"] == "TRK0000001001"
    assert "TRK0000001001" in result.answer


async def test_run_concurrency_cap_holds(make_stack: StackFactory) -> None:
    slow = SlowInventory(hold_s=0.3)
    stack = await make_stack(
        replace_activities=[slow.check_inventory], policy=FakeScriptedPolicy([wide_plan(8)])
    )
    result = await stack.ask("check eight skus", options=RunOptions(max_concurrency=3))
    assert [s.status for s in result.steps] == [StepStatus.SUCCEEDED] * 8
    assert len(slow.calls) == 8
    assert slow.max_in_flight == 3, "cap of 3 must be used fully and never exceeded"
    assert max_overlap(result.steps) <= 3


async def test_per_tool_cap_holds_below_run_cap(make_stack: StackFactory) -> None:
    slow = SlowInventory(hold_s=0.3)
    stack = await make_stack(
        replace_activities=[slow.check_inventory], policy=FakeScriptedPolicy([wide_plan(8)])
    )
    result = await stack.ask("check eight skus", options=RunOptions(max_concurrency=8))
    assert len(result.steps) == 8
    # check_inventory declares max_concurrency=4 in the tool catalog.
    assert slow.max_in_flight == 4


async def test_critical_path_first_when_cap_holds_steps_back(make_stack: StackFactory) -> None:
    plan = {
        "steps": [
            {"id": "kb", "tool": "search_kb", "args": {"query": "returns"}},
            {"id": "order", "tool": "get_order", "args": {"order_id": 1001}},
            {
                "id": "track",
                "tool": "track_shipment",
                "args": {"tracking_number": "$order.tracking_number"},
            },
        ]
    }
    stack = await make_stack(policy=FakeScriptedPolicy([plan]))
    result = await stack.ask("two branches", options=RunOptions(max_concurrency=1))
    # With one slot, the order → tracking chain (the critical path) starts first.
    assert interval(step(result, "order"))[0] <= interval(step(result, "kb"))[0]
    assert max_overlap(result.steps) == 1


async def test_runtime_expansion_over_a_list(stack: AgentStack) -> None:
    result = await stack.ask("Can order 1002 be fulfilled from stock?")
    order, stock = step(result, "s1"), step(result, "s2")
    skus = [item["sku"] for item in order.output["items"]]
    assert len(skus) == 2
    assert stock.args == [{"sku": sku} for sku in skus]
    assert [o["sku"] for o in stock.output] == skus
    assert any(not o["in_stock"] for o in stock.output), "seed: one item of 1002 is sold out"
    assert "out of stock" in result.answer


async def test_failed_step_skips_its_dependants(stack: AgentStack) -> None:
    result = await stack.ask("Where is order 999999?")
    order, tracking = step(result, "s1"), step(result, "s2")
    assert order.status == StepStatus.FAILED
    assert order.error is not None and order.error.type == "NotFound"
    assert order.error.non_retryable
    assert tracking.status == StepStatus.SKIPPED
    assert tracking.error is not None and "s1" in tracking.error.message
    assert "999999" in result.answer


async def test_null_reference_fails_the_step_not_the_run(make_stack: StackFactory) -> None:
    # Without a `when`, a plan that tracks a parcel the order does not have yet (1002 is
    # processing) resolves a null tracking number: that step fails, the run goes on.
    unguarded = {
        "steps": [
            {"id": "s1", "tool": "get_order", "args": {"order_id": 1002}},
            {
                "id": "s2",
                "tool": "track_shipment",
                "args": {"tracking_number": "$s1.tracking_number"},
            },
        ]
    }
    stack = await make_stack(policy=FakeScriptedPolicy([unguarded]))
    result = await stack.ask("Where is order 1002?", options=RunOptions(max_replans=0))
    tracking = step(result, "s2")
    assert tracking.status == StepStatus.FAILED
    assert tracking.error is not None and tracking.error.type == "InvalidArguments"
    assert "tracking_number" in tracking.error.message
    assert step(result, "s1").status == StepStatus.SUCCEEDED


async def test_progress_query_shows_live_steps(make_stack: StackFactory) -> None:
    slow = SlowInventory(hold_s=0.4)
    stack = await make_stack(
        replace_activities=[slow.check_inventory],
        policy=FakeScriptedPolicy([wide_plan(6)]),
        # Steps on the task queue: while local reads run, the workflow task that awaits
        # them stays open, and a query is answered when it completes.
        local_tools="off",
    )
    handle = await stack.start("check six skus", options=RunOptions(max_concurrency=2))
    seen: list[RunProgress] = []
    for _ in range(100):
        progress = await handle.query(AgentWorkflow.progress)
        if progress.stage.startswith("running") and progress.steps:
            seen.append(progress)
            if any(s.status == StepStatus.SUCCEEDED for s in progress.steps):
                break
        await asyncio.sleep(0.05)
    result = await handle.result()
    assert seen, "the query never showed the running stage"
    live = seen[-1]
    assert live.stage == "running 6 steps (round 0)"
    assert live.route is not None and live.route.intent == "scripted"
    statuses = {s.status for s in live.steps}
    assert StepStatus.RUNNING in statuses or StepStatus.PENDING in statuses
    assert sum(s.status == StepStatus.RUNNING for s in live.steps) <= 2
    done = await handle.query(AgentWorkflow.progress)
    assert done.stage == "done"
    assert [s.status for s in done.steps] == [s.status for s in result.steps]


@pytest.mark.smoke
async def test_the_agent_runs_the_same_in_the_workflow_sandbox(make_stack: StackFactory) -> None:
    """Workers run workflows unsandboxed by default (`workers.worker.cpu_worker`); in the
    sandbox, which forbids clocks, random and I/O in workflow code, runs still complete."""
    stack = await make_stack(workflow_sandbox="on")
    tracked = await stack.ask("Where is order 1001?")
    assert [s.status for s in tracked.steps] == [StepStatus.SUCCEEDED] * 2
    expanded = await stack.ask("Can order 1002 be fulfilled from stock?")
    assert expanded.steps and all(s.status == StepStatus.SUCCEEDED for s in expanded.steps)
