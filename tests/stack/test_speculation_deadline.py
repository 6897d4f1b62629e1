"""Speculative reads and deadlines on the real stack: dev server, Postgres, Redis, the
carrier service; only the models are scripted (`FakeEngine`, with latencies). Each stack
plans after its route (`plan_ahead="off"`): these are the reads made while the heavy model
plans after an unsure route."""

from __future__ import annotations

import asyncio

from agentkeel.examples.shop.carrier import serving
from agentkeel.schemas.deadline import DecisionKind
from agentkeel.schemas.result import StepStatus
from agentkeel.schemas.route import Tier
from agentkeel.schemas.speculation import SpeculationOutcome
from tests.support.agent_stack import StackFactory
from tests.support.speculation import KB_ONLY, QUESTION, STEPS, StandInOrders, cascade


async def test_a_predicted_read_runs_while_the_heavy_model_plans(make_stack: StackFactory) -> None:
    stack = await make_stack(plan_ahead="off", policy=cascade(STEPS, heavy_s=0.4))
    result = await stack.ask(QUESTION, options={"use_cache": False})

    assert result.route.tier == Tier.HEAVY
    assert [s.status for s in result.steps] == [StepStatus.SUCCEEDED] * 2
    assert [s.speculative for s in result.steps] == [True, False]
    assert result.speculation is not None
    assert [(c.tool, c.outcome) for c in result.speculation.calls] == [
        ("get_order", SpeculationOutcome.USED)
    ]
    # The order was read while the heavy model planned: its time is saved, not spent.
    assert result.timings_ms.speculation_saved > 0
    assert result.steps[0].output["order_id"] == 1001

    off = await stack.ask(QUESTION, options={"use_cache": False, "speculate": False})
    assert off.speculation is None
    assert not any(s.speculative for s in off.steps)


async def test_a_read_the_plan_does_not_make_is_cancelled_and_reported(
    make_stack: StackFactory,
) -> None:
    stack = await make_stack(plan_ahead="off", policy=cascade(KB_ONLY, heavy_s=0.2))
    result = await stack.ask(QUESTION, options={"use_cache": False})

    assert [s.tool for s in result.steps] == ["search_kb"]
    assert not result.steps[0].speculative
    assert result.speculation is not None
    [call] = result.speculation.calls
    assert (call.tool, call.args, call.outcome) == (
        "get_order",
        {"order_id": 1001},
        SpeculationOutcome.UNUSED,
    )
    assert result.timings_ms.speculation_saved == 0


async def test_a_speculative_read_that_failed_for_good_is_its_steps_failure(
    make_stack: StackFactory,
) -> None:
    """`speculation-failure-v1`: a non-retryable failure says the same call fails again, so
    the step takes it rather than make the call a second time."""
    orders = StandInOrders(failing=1)
    stack = await make_stack(
        plan_ahead="off", policy=cascade(STEPS, heavy_s=0.3), replace_activities=[orders.get_order]
    )
    result = await stack.ask(QUESTION, options={"use_cache": False})

    assert orders.calls == 1, "the speculative call only"
    [step] = [s for s in result.steps if s.tool == "get_order"]
    assert step.status is StepStatus.FAILED
    assert step.error is not None and step.error.type == "Unavailable", step.error
    assert result.speculation is not None
    assert [c.outcome for c in result.speculation.calls] == [SpeculationOutcome.FAILED]
    assert result.timings_ms.speculation_saved == 0


async def test_a_speculative_read_out_of_retries_is_made_again_by_its_step(
    make_stack: StackFactory,
) -> None:
    """A twin that failed only because its retries ran out (a flaky source, not a final
    answer) leaves the call to its step, with retries of its own."""
    orders = StandInOrders(failing=3, final=False)  # the tool's three attempts
    stack = await make_stack(
        plan_ahead="off", policy=cascade(STEPS, heavy_s=0.3), replace_activities=[orders.get_order]
    )
    result = await stack.ask(QUESTION, options={"use_cache": False})

    assert orders.calls == 4, "the speculative call's three attempts, then the step's own"
    [step] = [s for s in result.steps if s.tool == "get_order"]
    assert step.status is StepStatus.SUCCEEDED and not step.speculative
    assert result.speculation is not None
    assert [c.outcome for c in result.speculation.calls] == [SpeculationOutcome.FAILED]


async def test_a_slow_read_the_plan_does_not_make_is_cancelled_when_the_plan_arrives(
    make_stack: StackFactory,
) -> None:
    orders = StandInOrders(hold_s=5.0)
    stack = await make_stack(
        plan_ahead="off",
        policy=cascade(KB_ONLY, heavy_s=0.2),
        replace_activities=[orders.get_order],
    )
    result = await stack.ask(QUESTION, options={"use_cache": False})
    assert result.speculation is not None
    [call] = result.speculation.calls
    assert call.outcome is SpeculationOutcome.UNUSED
    assert call.cancelled
    assert result.timings_ms.total < 4000, "the run did not wait for the wasted read"
    for _ in range(50):  # the cancel reaches the activity through its heartbeat
        if orders.cancelled:
            break
        await asyncio.sleep(0.1)
    assert orders.cancelled == 1


async def test_a_speculation_setting_of_off_starts_nothing(make_stack: StackFactory) -> None:
    stack = await make_stack(
        plan_ahead="off", policy=cascade(STEPS, heavy_s=0.1), speculation="off"
    )
    result = await stack.ask(QUESTION, options={"use_cache": False})
    assert result.speculation is None
    assert [s.status for s in result.steps] == [StepStatus.SUCCEEDED] * 2


async def test_a_tight_deadline_trades_tier_and_optional_steps_and_is_met(
    make_stack: StackFactory,
) -> None:
    async with serving(400) as slow_carrier:
        stack = await make_stack(
            plan_ahead="off", policy=cascade(STEPS, heavy_s=0.5), carrier_url=slow_carrier
        )
        # Unconstrained first: complete, and what the workers measure for the next run.
        full = await stack.ask(QUESTION, options={"use_cache": False})
        assert [s.status for s in full.steps] == [StepStatus.SUCCEEDED] * 2
        assert full.deadline is None

        budget = 500
        fast = await stack.ask(QUESTION, options={"use_cache": False, "deadline_ms": budget})

    assert fast.deadline is not None
    assert fast.deadline.source == "measured"
    kinds = [d.kind for d in fast.deadline.decisions]
    # In the order of preference: a lighter tier, stale cached reads, then optional steps.
    assert kinds == [DecisionKind.TIER, DecisionKind.STALE, DecisionKind.DROP]
    assert fast.route.tier == Tier.LIGHT
    dropped = next(d for d in fast.deadline.decisions if d.kind is DecisionKind.DROP)
    assert dropped.steps == ["s2"]
    assert [s.status for s in fast.steps] == [StepStatus.SUCCEEDED, StepStatus.SKIPPED]
    assert "deadline" in (fast.steps[1].skipped_because or "")
    assert "left out: track_shipment" in fast.answer
    assert fast.timings_ms.total <= budget * 1.1
    assert fast.deadline.met
    assert full.timings_ms.total > fast.timings_ms.total
    assert full.timings_ms.total > budget


async def test_a_deadline_that_cannot_be_met_is_said_at_once(make_stack: StackFactory) -> None:
    async with serving(400) as slow_carrier:
        mandatory = [{**s, "optional": False} for s in STEPS]
        stack = await make_stack(
            plan_ahead="off", policy=cascade(mandatory, heavy_s=0.3), carrier_url=slow_carrier
        )
        await stack.ask(QUESTION, options={"use_cache": False})
        result = await stack.ask(QUESTION, options={"use_cache": False, "deadline_ms": 150})

    assert result.deadline is not None and not result.deadline.met
    assert result.deadline.decisions[-1].kind is DecisionKind.INFEASIBLE
    assert result.answer.startswith("I can't answer within 150 ms")
    assert all(s.status is StepStatus.SKIPPED for s in result.steps)
    assert result.timings_ms.total < 400  # at once: no slow call was made
    # Decided before planning: no read was speculated and the heavy model was not asked.
    assert result.speculation is None
    assert (result.timings_ms.plan or 0) < 250


async def test_a_watch_cannot_be_planned_against_a_deadline(make_stack: StackFactory) -> None:
    watch = [
        {"id": "s1", "tool": "get_order", "args": {"order_id": 1001}},
        {
            "id": "s2",
            "tool": "get_order",
            "args": {"order_id": 1001},
            "repeat": {"until": {"ref": "$s2.status", "in": ["delivered"]}, "every_s": 60},
        },
    ]
    stack = await make_stack(plan_ahead="off", policy=cascade(watch, heavy_s=0.05))
    result = await stack.ask(QUESTION, options={"use_cache": False, "deadline_ms": 60_000})
    assert result.deadline is not None and not result.deadline.met
    assert result.deadline.decisions[-1].kind is DecisionKind.INFEASIBLE
    assert "open-ended" in result.answer
    assert all(s.status is StepStatus.SKIPPED for s in result.steps)
