"""Speculative reads and deadlines on the real stack: dev server, Postgres, Redis, the
carrier service; only the models are scripted (`FakeEngine`, with latencies)."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from inference.llm.cascade import CascadePolicy
from inference.llm.policy import LlmPolicy
from schemas.deadline import DecisionKind
from schemas.plan.model import Plan
from schemas.request import AgentRequest
from schemas.result import StepStatus
from schemas.route import Tier
from schemas.speculation import SpeculationOutcome
from tests.conftest import StackFactory
from tests.fakes import FakeEngine
from workers.stack.carrier import serving

QUESTION = "where's my parcel for order 1001"
UNSURE = {"refund": 0.55, "order_status": 0.45}
STEPS: list[dict[str, Any]] = [
    {"id": "s1", "tool": "get_order", "args": {"order_id": 1001}},
    {
        "id": "s2",
        "tool": "track_shipment",
        "args": {"tracking_number": "$s1.tracking_number"},
        "optional": True,
    },
]
KB_ONLY: list[dict[str, Any]] = [
    {"id": "s1", "tool": "search_kb", "args": {"query": "shipping times"}}
]


def cascade(steps: list[dict[str, Any]], *, heavy_s: float) -> CascadePolicy:
    light = FakeEngine(
        "light-fake", label_probs=UNSURE, documents=[{"rationale": "scripted", "steps": steps}]
    )
    heavy = FakeEngine(
        "heavy-fake",
        documents=[{"intent": "order_status", "rationale": "scripted", "steps": steps}],
        answer="Order 1001 is on its way.",
        delay_s=heavy_s,
    )
    return CascadePolicy(
        LlmPolicy(light, tier=Tier.LIGHT, threshold=0.7),
        LlmPolicy(heavy, tier=Tier.HEAVY, threshold=0.7),
    )


async def test_a_predicted_read_runs_while_the_heavy_model_plans(make_stack: StackFactory) -> None:
    stack = await make_stack(policy=cascade(STEPS, heavy_s=0.4))
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
    stack = await make_stack(policy=cascade(KB_ONLY, heavy_s=0.2))
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


async def test_a_speculation_setting_of_off_starts_nothing(make_stack: StackFactory) -> None:
    stack = await make_stack(policy=cascade(STEPS, heavy_s=0.1), speculation="off")
    result = await stack.ask(QUESTION, options={"use_cache": False})
    assert result.speculation is None
    assert [s.status for s in result.steps] == [StepStatus.SUCCEEDED] * 2


async def test_a_tight_deadline_trades_tier_and_optional_steps_and_is_met(
    make_stack: StackFactory,
) -> None:
    async with serving(400) as slow_carrier:
        stack = await make_stack(policy=cascade(STEPS, heavy_s=0.5), carrier_url=slow_carrier)
        # Unconstrained first: complete, and what the workers measure for the next run.
        full = await stack.ask(QUESTION, options={"use_cache": False})
        assert [s.status for s in full.steps] == [StepStatus.SUCCEEDED] * 2
        assert full.deadline is None

        budget = 500
        fast = await stack.ask(QUESTION, options={"use_cache": False, "deadline_ms": budget})

    assert fast.deadline is not None
    assert fast.deadline.source == "measured"
    kinds = [d.kind for d in fast.deadline.decisions]
    assert DecisionKind.TIER in kinds and DecisionKind.DROP in kinds
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
        stack = await make_stack(policy=cascade(mandatory, heavy_s=0.3), carrier_url=slow_carrier)
        await stack.ask(QUESTION, options={"use_cache": False})
        result = await stack.ask(QUESTION, options={"use_cache": False, "deadline_ms": 150})

    assert result.deadline is not None and not result.deadline.met
    assert result.deadline.decisions[-1].kind is DecisionKind.INFEASIBLE
    assert result.answer.startswith("I can't answer within 150 ms")
    assert all(s.status is StepStatus.SKIPPED for s in result.steps)
    assert result.timings_ms.total < 400  # at once: no slow call was made


@pytest.mark.parametrize("bad", [0, -5, 10**9, "soon", True, 1.5])
def test_a_bad_deadline_names_the_field(bad: Any) -> None:
    with pytest.raises(ValidationError) as raised:
        AgentRequest.model_validate({"question": "q", "options": {"deadline_ms": bad}})
    assert "deadline_ms" in str(raised.value)


@pytest.mark.parametrize("bad", ["yes", 1, "true"])
def test_optional_must_be_a_boolean(bad: Any) -> None:
    with pytest.raises(ValidationError) as raised:
        Plan.model_validate({"steps": [{"id": "s1", "tool": "get_order", "optional": bad}]})
    assert "optional" in str(raised.value)
