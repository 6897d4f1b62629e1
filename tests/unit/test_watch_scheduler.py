"""Long-running plans on the scheduler alone, on a fake clock: `wait` timers, watched
(`repeat`) steps, and continue-as-new picking up where they were."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import Any

from agentkeel.schemas import errors
from agentkeel.schemas.plan.model import Plan
from agentkeel.schemas.progress import Waiting
from agentkeel.schemas.result import StepError, StepStatus
from agentkeel.schemas.tools import TOOLS
from agentkeel.workflows.dag.calls import ToolCall
from agentkeel.workflows.dag.scheduler import DagScheduler
from agentkeel.workflows.dag.step_gates import SchedulerLimits
from tests.support.plans import watch

# -- the scheduler on a fake clock ---------------------------------------------------------


class FakeClock:
    """Workflow time that moves only when every task sleeps: then to the earliest wake-up
    (like a time-skipping server). `drive` runs a coroutine on it."""

    def __init__(self) -> None:
        self.now = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)
        self.slept: list[tuple[timedelta, str]] = []
        self._sleepers: list[tuple[datetime, int, asyncio.Future[None]]] = []

    def __call__(self) -> datetime:
        return self.now

    async def sleep(self, duration: timedelta, summary: str) -> None:
        self.slept.append((duration, summary))
        wake = asyncio.get_running_loop().create_future()
        self._sleepers.append((self.now + duration, len(self.slept), wake))
        await wake

    async def drive(self, work: Any) -> Any:
        task = asyncio.ensure_future(work)
        while not task.done():
            for _ in range(50):  # let every task run until it blocks
                await asyncio.sleep(0)
            pending = sorted(s for s in self._sleepers if not s[2].done())
            self._sleepers = pending[1:]
            if pending and not task.done():
                self.now = max(self.now, pending[0][0])
                pending[0][2].set_result(None)
        return task.result()


def order_reader(statuses: list[str]) -> tuple[list[ToolCall], Any]:
    """A get_order that answers the statuses in turn (the last one repeats)."""
    calls: list[ToolCall] = []

    async def dispatch(call: ToolCall) -> dict[str, Any]:
        calls.append(call)
        reads = sum(1 for c in calls if c.tool == "get_order")
        status = statuses[min(reads - 1, len(statuses) - 1)]
        tracking = "TRK0000001002" if status != "processing" else None
        return {
            "order_id": call.args.get("order_id"),
            "status": status,
            "tracking_number": tracking,
        }

    return calls, dispatch


class Driven(DagScheduler):
    """The scheduler on the fake clock."""

    clock: FakeClock

    async def run(self) -> Any:
        return await self.clock.drive(super().run())


def scheduler(plan: dict[str, Any], dispatch: Any, clock: FakeClock, **kw: Any) -> DagScheduler:
    driven = Driven(
        Plan.model_validate(plan),
        TOOLS,
        dispatch=dispatch,
        now=clock,
        describe_error=lambda e: StepError(type="x", message=str(e)),
        sleep=clock.sleep,
        **kw,
    )
    driven.clock = clock
    return driven


async def test_a_watch_reruns_its_read_until_the_condition_holds_then_its_dependants_run() -> None:
    clock = FakeClock()
    calls, dispatch = order_reader(["processing", "processing", "shipped"])
    shown: list[tuple[str, Waiting | None]] = []
    plan = {
        "steps": [
            watch("s1", 1002, ["shipped"], every_s=3600, timeout_s=86400),
            {"id": "s2", "tool": "search_kb", "args": {"query": "$s1.status"}},
        ]
    }
    outcomes = await scheduler(
        plan, dispatch, clock, on_wait=lambda s, w: shown.append((s, w))
    ).run()
    first, second = outcomes
    assert first.status is StepStatus.SUCCEEDED and first.runs == 3
    assert first.output["status"] == "shipped"
    assert second.status is StepStatus.SUCCEEDED and second.args == {"query": "shipped"}
    assert [d for d, _ in clock.slept] == [timedelta(hours=1)] * 2
    assert all(c.watch for c in calls[:3]) and not calls[3].watch  # only the watch reads fresh
    waits = [w for _, w in shown if w is not None]
    assert len(waits) == 2 and waits[0].deadline == datetime(2026, 12, 2, 9, 0, tzinfo=UTC)
    assert shown[-1][1] is None  # nothing is left shown as waiting


async def test_a_watch_that_never_sees_its_condition_ends_timed_out_and_skips_dependants() -> None:
    clock = FakeClock()
    _, dispatch = order_reader(["processing"])
    plan = {
        "steps": [
            watch("s1", 1002, ["shipped"], every_s=6 * 3600, timeout_s=2 * 86400),
            {
                "id": "s2",
                "tool": "track_shipment",
                "args": {"tracking_number": "$s1.tracking_number"},
            },
        ]
    }
    first, second = await scheduler(plan, dispatch, clock).run()
    assert first.status is StepStatus.TIMED_OUT and first.as_planned
    assert first.error is not None and first.error.type == errors.WATCH_TIMED_OUT
    assert first.output["status"] == "processing" and first.runs == 9  # 0 h, 6 h ... 48 h
    assert second.status is StepStatus.SKIPPED and second.error is None
    assert second.skipped_because is not None and "timed out" in second.skipped_because


async def test_the_request_interval_overrides_the_plans() -> None:
    clock = FakeClock()
    _, dispatch = order_reader(["processing", "shipped"])
    plan = {"steps": [watch("s1", 1002, ["shipped"], every_s=3600)]}
    await scheduler(plan, dispatch, clock, limits=SchedulerLimits(watch_every_s=2)).run()
    assert [d for d, _ in clock.slept] == [timedelta(seconds=2)]


async def test_a_wait_step_sleeps_then_its_dependants_run() -> None:
    clock = FakeClock()
    calls, dispatch = order_reader(["shipped"])
    plan = {
        "steps": [
            {"id": "w", "tool": "wait", "args": {"seconds": 7200}},
            {"id": "s1", "tool": "get_order", "args": {"order_id": 1002}, "after": ["w"]},
        ]
    }
    waited, read = await scheduler(plan, dispatch, clock).run()
    assert waited.status is StepStatus.SUCCEEDED and waited.output["waited_s"] == 7200
    assert [d for d, _ in clock.slept] == [timedelta(hours=2)]
    assert read.status is StepStatus.SUCCEEDED and len(calls) == 1
    until = {"steps": [{"id": "w", "tool": "wait", "args": {"until": "2026-12-01T08:00:00Z"}}]}
    clock.slept.clear()
    [past] = await scheduler(until, dispatch, clock).run()
    assert past.status is StepStatus.SUCCEEDED and clock.slept == []  # already past


async def test_sleeping_watches_and_waits_hold_no_slot_other_steps_need() -> None:
    clock = FakeClock()
    _, dispatch = order_reader(["processing"])
    plan = {
        "steps": [
            {"id": "w", "tool": "wait", "args": {"seconds": 600}},
            watch("a", 1002, ["shipped"], every_s=60, timeout_s=600),
            watch("b", 1003, ["shipped"], every_s=60, timeout_s=600),
            {"id": "c", "tool": "get_order", "args": {"order_id": 1001}},
        ]
    }
    run = scheduler(plan, dispatch, clock, limits=SchedulerLimits(max_concurrency=2))
    waited, a, b, c = await run.run()
    assert a.status is b.status is StepStatus.TIMED_OUT and waited.status is StepStatus.SUCCEEDED
    assert a.started_at is not None
    assert c.status is StepStatus.SUCCEEDED and c.finished_at == a.started_at  # not 600 s later
    assert waited.finished_at == a.started_at + timedelta(seconds=600)
    assert run.max_observed_concurrency <= 2


async def test_a_continue_as_new_stops_sleeping_waits_too_and_keeps_their_end() -> None:
    clock = FakeClock()
    start = clock.now
    _, dispatch = order_reader(["processing"])
    plan = {
        "steps": [
            {"id": "w", "tool": "wait", "args": {"seconds": 3600}},
            watch("s1", 1002, ["shipped"], every_s=60, timeout_s=7200),
        ]
    }
    limits = SchedulerLimits(runs_before_continue=2)
    first = scheduler(plan, dispatch, clock, limits=limits)
    waiting, watching = await first.run()
    assert waiting.status is watching.status is StepStatus.RUNNING
    assert waiting.next_run_at == start + timedelta(hours=1)
    assert clock.now < start + timedelta(minutes=5)  # it did not sit out the hour
    resumed = scheduler(plan, dispatch, clock, limits=SchedulerLimits(), resume=[waiting, watching])
    waited, _ = await resumed.run()
    assert waited.status is StepStatus.SUCCEEDED
    assert waited.output["waited_until"] == (start + timedelta(hours=1)).isoformat()


async def test_a_wait_too_far_away_fails_its_step_not_the_run() -> None:
    clock = FakeClock()
    _, dispatch = order_reader(["shipped"])
    plan = {
        "steps": [
            {"id": "w", "tool": "wait", "args": {"until": "9999-12-31T23:59:59Z"}},
            {"id": "s1", "tool": "get_order", "args": {"order_id": 1002}},
        ]
    }
    waited, read = await scheduler(plan, dispatch, clock).run()
    assert waited.status is StepStatus.FAILED and clock.slept == []
    assert waited.error is not None and waited.error.type == errors.INVALID_ARGUMENTS
    assert read.status is StepStatus.SUCCEEDED


async def test_watches_stop_for_a_continue_as_new_and_pick_up_where_they_were() -> None:
    clock = FakeClock()
    calls, dispatch = order_reader(["processing"] * 4 + ["shipped"])
    plan = {
        "steps": [
            {"id": "c", "tool": "search_kb", "args": {"query": "shipping"}},
            watch("s1", 1002, ["shipped"], every_s=60, timeout_s=3600),
        ]
    }
    limits = SchedulerLimits(runs_before_continue=2)
    first = scheduler(plan, dispatch, clock, limits=limits)
    done, watching = await first.run()
    assert done.status is StepStatus.SUCCEEDED
    assert watching.status is StepStatus.RUNNING and first.suspended == ["s1"]
    assert watching.runs == 2 and watching.next_run_at == clock.now + timedelta(seconds=60)
    second = scheduler(plan, dispatch, clock, limits=limits, resume=[done, watching])
    done2, watching2 = await second.run()
    assert done2 == done  # not run again
    assert watching2.status is StepStatus.RUNNING and watching2.runs == 4
    assert watching2.started_at == watching.started_at  # the deadline counts from the first
    third = scheduler(plan, dispatch, clock, limits=limits, resume=[done2, watching2])
    _, finished = await third.run()
    assert finished.status is StepStatus.SUCCEEDED and finished.runs == 5
    assert [c.tool for c in calls].count("search_kb") == 1
