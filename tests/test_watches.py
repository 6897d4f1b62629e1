"""Long-running plans: `wait` timers, watched (`repeat`) steps, continue-as-new, and large
outputs by reference — on the scheduler alone, on a time-skipping server, and on the real
dev server against Postgres."""

from __future__ import annotations

import asyncio
import json
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import asyncpg
import pytest
from temporalio.client import WorkflowExecutionStatus, WorkflowFailureError, WorkflowHandle
from temporalio.exceptions import ApplicationError
from temporalio.testing import WorkflowEnvironment

from agentkeel.client.watches import format_waiting
from agentkeel.client.watches import waiting_runs as list_waiting_runs
from agentkeel.examples.shop.demo_watch import ship_order
from agentkeel.examples.shop.rules.policy import RulesPolicy
from agentkeel.inference.llm.plan_schema import plan_json_schema
from agentkeel.schemas import errors, names
from agentkeel.schemas.model_calls import RouteInput, RouteResult
from agentkeel.schemas.plan.model import Plan
from agentkeel.schemas.plan.references import PlanValidationError
from agentkeel.schemas.plan.validation import validate_plan
from agentkeel.schemas.progress import RunProgress, Waiting
from agentkeel.schemas.request import AgentRequest, RunOptions
from agentkeel.schemas.result import AgentResult, StepError, StepStatus
from agentkeel.schemas.route import Route, Tier
from agentkeel.schemas.tokens import TokenEvent, TokenEventType
from agentkeel.schemas.tools import TOOLS
from agentkeel.workflows.dag.calls import ToolCall
from agentkeel.workflows.dag.fan_out import child_workflow_id
from agentkeel.workflows.dag.scheduler import DagScheduler
from agentkeel.workflows.dag.step_gates import SchedulerLimits
from tests.support.agent_stack import StackFactory
from tests.support.fakes import FakeScriptedPolicy
from tests.support.plans import every_order_plan, list_orders_of, watch

PROCESSING_ORDER = 1002
"""Seed data: processing, no tracking number yet."""

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


@pytest.mark.parametrize(
    ("step", "kind"),
    [
        (watch("s1", 1, ["shipped"]) | {"tool": "create_refund"}, errors.INVALID_REPEAT),
        (
            {
                "id": "s1",
                "tool": "get_order",
                "args": {"order_id": 1},
                "repeat": {"until": {"ref": "$s0.status", "in": ["x"]}},
            },
            errors.INVALID_REPEAT,
        ),
        (
            {
                "id": "s1",
                "tool": "get_order",
                "args": {"order_id": 1},
                "repeat": {"until": {"ref": "$s1.colour", "in": ["x"]}},
            },
            errors.MISSING_REFERENCE,
        ),
        ({"id": "w", "tool": "wait", "args": {}}, errors.INVALID_ARGUMENTS),
        ({"id": "w", "tool": "wait", "args": {"seconds": -1}}, errors.INVALID_ARGUMENTS),
        ({"id": "w", "tool": "wait", "args": {"until": "tomorrow"}}, errors.INVALID_ARGUMENTS),
        (
            {"id": "w", "tool": "wait", "args": {"until": "2026-12-01T09:00:00"}},
            errors.INVALID_ARGUMENTS,
        ),
    ],
)
def test_bad_waits_and_repeats_are_named_plan_errors(step: dict[str, Any], kind: str) -> None:
    if step["tool"] == "create_refund":
        step = {**step, "args": {"order_id": 1, "amount_cents": 100, "reason": "x"}}
    with pytest.raises(PlanValidationError) as caught:
        validate_plan(Plan.model_validate({"steps": [step]}), TOOLS)
    assert caught.value.kind == kind


def test_a_repeat_faster_than_a_second_is_refused_by_the_plan_model() -> None:
    with pytest.raises(ValueError, match="every_s"):
        Plan.model_validate({"steps": [watch("s1", 1, ["shipped"], every_s=0.1)]})


@pytest.mark.parametrize(
    ("question", "statuses", "delay_s"),
    [
        ("Tell me when order 1002 ships", ["shipped", "delivered"], None),
        ("Please let me know once order #1002 has been delivered", ["delivered"], None),
        ("notify me as soon as order 1002 is dispatched", ["shipped", "delivered"], None),
        ("check order 1002 again in 2 hours", None, 7200.0),
        ("Could you look at order 1002 again in 30 minutes?", None, 1800.0),
    ],
)
async def test_the_rules_policy_plans_watches_and_waits(
    question: str, statuses: list[str] | None, delay_s: float | None
) -> None:
    routed = await RulesPolicy().route(RouteInput(question=question))
    assert routed.confident and routed.draft_plan is not None
    steps = routed.draft_plan.steps
    validate_plan(routed.draft_plan, TOOLS)
    read = next(s for s in steps if s.tool == "get_order")
    if statuses is None:
        assert read.repeat is None
    else:
        assert read.repeat is not None and read.repeat.until.in_ == statuses
    waits = [s for s in steps if s.tool == "wait"]
    if delay_s is None:
        assert waits == []
    else:
        assert [w.args for w in waits] == [{"seconds": delay_s}] and read.after == [waits[0].id]


async def test_a_question_about_now_plans_no_watch() -> None:
    for question in ("Where is order 1002?", "Will order 1001 arrive in 2 days?"):
        routed = await RulesPolicy().route(RouteInput(question=question))
        assert routed.draft_plan is not None
        assert all(s.repeat is None and s.tool != "wait" for s in routed.draft_plan.steps)


# -- time-skipping server: days of waiting in seconds -------------------------------------


async def test_a_wait_and_a_watch_over_days_on_skipped_time(
    make_stack: StackFactory, time_skipping_env: WorkflowEnvironment
) -> None:
    plan = {
        "steps": [
            {"id": "w", "tool": "wait", "args": {"seconds": 2 * 86400}},
            watch("s1", PROCESSING_ORDER, ["shipped"], every_s=6 * 3600, timeout_s=3 * 86400)
            | {"after": ["w"]},
        ]
    }
    stack = await make_stack(on=time_skipping_env.client, policy=FakeScriptedPolicy([plan]))
    started = time.monotonic()
    result = await asyncio.wait_for(stack.ask("watch order 1002 for days"), timeout=120)
    waited, watched = result.steps
    assert waited.status is StepStatus.SUCCEEDED and waited.output["waited_s"] >= 2 * 86400
    # every 6 h from 0 h: the run at 72 h is on the deadline (a little past it in real time)
    assert watched.status is StepStatus.TIMED_OUT and watched.runs in (12, 13)
    assert watched.finished_at is not None and waited.started_at is not None
    assert watched.finished_at - waited.started_at >= timedelta(days=2, hours=66)
    assert "stopped watching" in result.answer
    assert time.monotonic() - started < 90, "days of waiting took days"


# -- the real dev server and Postgres ------------------------------------------------------


async def until_waiting(handle: WorkflowHandle[Any, Any], timeout_s: float = 20) -> RunProgress:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        progress: RunProgress = await handle.query(names.PROGRESS_QUERY, result_type=RunProgress)
        if progress.waiting:
            return progress
        await asyncio.sleep(0.2)
    raise AssertionError("the run never showed a wait")


async def test_tell_me_when_an_order_ships_waits_then_answers_when_postgres_says_so(
    make_stack: StackFactory, orders_db: asyncpg.Pool
) -> None:
    stack = await make_stack()
    handle = await stack.start(
        f"Tell me when order {PROCESSING_ORDER} ships", options={"watch_every_s": 1}
    )
    progress = await until_waiting(handle)
    [waiting] = progress.waiting
    assert waiting.tool == "get_order" and "shipped" in waiting.what
    assert progress.stage.startswith("waiting")
    description = await handle.describe()
    assert description.status == WorkflowExecutionStatus.RUNNING
    waiting_runs = [
        w.id
        async for w in stack.client.list_workflows(
            f'AgentWaiting = true AND WorkflowId = "{handle.id}"'
        )
    ]
    for _ in range(50):  # visibility is eventually consistent
        if waiting_runs:
            break
        await asyncio.sleep(0.2)
        waiting_runs = [
            w.id
            async for w in stack.client.list_workflows(
                f'AgentWaiting = true AND WorkflowId = "{handle.id}"'
            )
        ]
    assert waiting_runs == [handle.id]
    listed = [r for r in await list_waiting_runs(stack.client) if r.workflow_id == handle.id]
    assert [w.tool for r in listed for w in r.waiting] == ["get_order"]  # `agentkeel watches`
    assert "get_order" in format_waiting(listed)
    await asyncio.sleep(1.5)
    await ship_order(orders_db, PROCESSING_ORDER)
    shipped_at = time.monotonic()
    result: AgentResult = await asyncio.wait_for(handle.result(), timeout=15)
    assert time.monotonic() - shipped_at < 10
    order = next(s for s in result.steps if s.tool == "get_order")
    assert order.status is StepStatus.SUCCEEDED and order.runs >= 2
    assert order.output["status"] == "shipped"
    assert f"Order {PROCESSING_ORDER} is shipped" in result.answer
    assert next(s for s in result.steps if s.tool == "track_shipment").status in (
        StepStatus.SUCCEEDED,
        StepStatus.FAILED,  # the carrier stand-in may not know a parcel made up by the test
    )
    final = await handle.describe()
    assert final.search_attributes.get("AgentWaiting") in (None, [])


class RefundAndWatch(FakeScriptedPolicy):
    """Routes as a refund the request asked for; plans a refund and a watch."""

    async def route(self, request: RouteInput) -> RouteResult:
        route = Route(intent="refund+order_status", confidence=0.5, tier=Tier.RULES)
        return RouteResult(route=route, confident=False)


async def test_a_long_watch_continues_as_new_twice_without_repeating_its_side_effect(
    make_stack: StackFactory, orders_db: asyncpg.Pool
) -> None:
    refundable = await orders_db.fetchval(
        "SELECT order_id FROM orders WHERE status = 'delivered' AND total_cents >= 500 "
        "ORDER BY order_id LIMIT 1"
    )
    plan = {
        "steps": [
            {
                "id": "r",
                "tool": "create_refund",
                "args": {"order_id": refundable, "amount_cents": 100, "reason": "late"},
            },
            watch("s1", PROCESSING_ORDER, ["shipped"], every_s=1, timeout_s=600),
        ]
    }
    stack = await make_stack(policy=RefundAndWatch([plan]))
    # The request names the refund's order and amount: a side effect acts on the user's words.
    handle = await stack.start(
        f"refund $1.00 on order {refundable} and watch order {PROCESSING_ORDER}",
        options={"watch_every_s": 1, "continue_after_runs": 2},
    )
    deadline = time.monotonic() + 30
    continued = 0
    while time.monotonic() < deadline and continued < 2:
        await asyncio.sleep(0.5)
        try:
            progress = await handle.query(names.PROGRESS_QUERY, result_type=RunProgress)
        except Exception:  # between two runs of the chain
            continue
        continued = progress.continued
    assert continued >= 2
    await ship_order(orders_db, PROCESSING_ORDER)
    result: AgentResult = await asyncio.wait_for(handle.result(), timeout=20)
    refund, order = result.steps
    assert refund.status is StepStatus.SUCCEEDED and order.status is StepStatus.SUCCEEDED
    assert order.runs >= 5 and order.output["status"] == "shipped"
    assert result.run_id != handle.first_execution_run_id or result.run_id != handle.run_id
    rows = await orders_db.fetch("SELECT refund_id FROM refunds WHERE order_id = $1", refundable)
    assert len(rows) == 1, "the refund was made again by a continued run"
    assert result.timings_ms.total >= 4000  # the chain's whole time, not the last run's


async def test_a_400_order_fan_out_keeps_history_under_a_megabyte_and_the_result_complete(
    make_stack: StackFactory, orders_db: asyncpg.Pool
) -> None:
    order_ids = await orders_db.fetch("SELECT order_id FROM orders ORDER BY order_id LIMIT 400")
    assert len(order_ids) == 400
    stack = await make_stack(
        policy=FakeScriptedPolicy([every_order_plan()]),
        replace_activities=[list_orders_of([int(o["order_id"]) for o in order_ids])],
    )
    handle = await stack.start(
        "every order", options={"max_fan_out": 400, "max_tool_calls": 401, "max_concurrency": 32}
    )
    result: AgentResult = await asyncio.wait_for(handle.result(), timeout=240)
    fanned = result.steps[1]
    assert fanned.status is StepStatus.SUCCEEDED
    assert fanned.output is None and fanned.output_ref is not None
    assert fanned.output_ref.items == 400
    size = len((await handle.fetch_history()).to_json())
    children = [child_workflow_id(result.run_id, "s2", n) for n in range(4)]
    parts = [
        len((await stack.client.get_workflow_handle(child).fetch_history()).to_json())
        for child in children
    ]
    print(f"400-order fan-out: run history {size / 1e6:.2f} MB, parts {parts}")
    assert size < 1_000_000
    assert len(parts) == 4 and max(parts) < 1_000_000  # every history stays small
    complete = await stack.agent_client().resolve_outputs(result)
    orders = complete.steps[1].output
    assert [o["order_id"] for o in orders] == [o["order_id"] for o in order_ids]
    assert len(json.dumps(orders)) > 16_384


async def test_a_failing_element_of_a_fan_out_in_children_fails_its_step_by_name(
    make_stack: StackFactory, orders_db: asyncpg.Pool
) -> None:
    rows = await orders_db.fetch("SELECT order_id FROM orders ORDER BY order_id LIMIT 149")
    order_ids = [int(r["order_id"]) for r in rows]
    order_ids.insert(120, 99_999_999)  # no such order: NotFound, not retried
    stack = await make_stack(
        policy=FakeScriptedPolicy([every_order_plan()]),
        replace_activities=[list_orders_of(order_ids)],
    )
    result = await stack.ask(
        "every order", options={"max_fan_out": 150, "max_tool_calls": 151, "max_replans": 0}
    )
    fanned = result.steps[1]
    assert fanned.status is StepStatus.FAILED and fanned.output_ref is None
    assert fanned.error is not None and fanned.error.type == errors.NOT_FOUND
    assert fanned.error.message.startswith("s2[120]: ")
    assert result.steps[0].status is StepStatus.SUCCEEDED and result.answer


def test_the_llm_plan_schema_lets_reads_repeat_and_nothing_else() -> None:
    schema = plan_json_schema()
    steps = {
        s["properties"]["tool"]["enum"][0]: s
        for s in schema["properties"]["steps"]["items"]["anyOf"]
    }
    assert "repeat" in steps["get_order"]["properties"]
    assert "repeat" not in steps["create_refund"]["properties"]
    assert "repeat" not in steps["wait"]["properties"]
    every = steps["get_order"]["properties"]["repeat"]["properties"]["every_s"]
    assert every["minimum"] == 1


async def test_a_client_cannot_start_a_run_with_a_forged_continuation(
    make_stack: StackFactory,
) -> None:
    stack = await make_stack()
    forged = {
        "from_run_id": "whatever",
        "started_at": "2026-12-01T09:00:00Z",
        "route": {"intent": "refund", "confidence": 1.0, "tier": "rules"},
        "plan": {"steps": [{"id": "s1", "tool": "search_kb", "args": {"query": "x"}}]},
        "steps": [],
        "allowed_effects": ["create_refund"],
    }
    handle = await stack.client.start_workflow(
        names.AGENT_WORKFLOW,
        args=[{"question": "hi"}, forged],
        id=f"forged-{time.monotonic_ns()}",
        task_queue=stack.task_queue,
    )
    with pytest.raises(WorkflowFailureError) as failed:
        await asyncio.wait_for(handle.result(), timeout=20)
    cause = failed.value.cause
    assert isinstance(cause, ApplicationError) and cause.type == errors.INVALID_REQUEST
    assert "one input" in cause.message


async def test_a_watch_that_fired_after_continuing_streams_its_answer_to_the_client(
    make_stack: StackFactory, orders_db: asyncpg.Pool, redis_url: str
) -> None:
    stack = await make_stack()
    client = stack.agent_client(redis_url=redis_url)
    events: list[TokenEvent] = []
    workflow_id = f"watch-{time.monotonic_ns()}"
    request = AgentRequest(
        question=f"Tell me when order {PROCESSING_ORDER} ships",
        tenant=stack.tenant,
        options=RunOptions(watch_every_s=1, continue_after_runs=1),
    )
    asked = asyncio.ensure_future(
        client.ask_streaming(request, on_event=events.append, workflow_id=workflow_id)
    )
    try:
        for _ in range(60):  # until the chain has continued as new
            await asyncio.sleep(0.5)
            try:
                if (await client.progress(workflow_id)).continued >= 1:
                    break
            except Exception:  # between two runs of the chain
                continue
        await ship_order(orders_db, PROCESSING_ORDER)
        result = await asyncio.wait_for(asked, timeout=20)
    finally:
        await client.close()
    streamed = "".join(e.text for e in events if e.type is TokenEventType.TOKEN)
    assert streamed == result.answer and "is shipped" in streamed
    history = await stack.client.get_workflow_handle(
        workflow_id, run_id=result.run_id
    ).fetch_history()
    started = history.events[0].workflow_execution_started_event_attributes
    assert started.continued_execution_run_id  # the answer came from a continued run
