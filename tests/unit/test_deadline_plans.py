"""Deadlines and optional steps in plans and requests, and the counters of speculative reads
and deadlines: no run."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from agentkeel.schemas.deadline import DecisionKind
from agentkeel.schemas.plan.model import Plan
from agentkeel.schemas.request import AgentRequest
from agentkeel.schemas.speculation import SpeculationOutcome
from agentkeel.workflows.deadline import droppable


def test_an_optional_step_goes_only_with_optional_dependants() -> None:
    plan = Plan.model_validate(
        {
            "steps": [
                {"id": "a", "tool": "get_order", "args": {"order_id": 1}, "optional": True},
                {
                    "id": "b",
                    "tool": "track_shipment",
                    "args": {"tracking_number": "$a.tracking_number"},
                },
                {"id": "c", "tool": "get_order", "args": {"order_id": 2}, "optional": True},
                {
                    "id": "d",
                    "tool": "track_shipment",
                    "args": {"tracking_number": "$c.tracking_number"},
                    "optional": True,
                },
            ]
        }
    )
    by_id = {s.id: s for s in plan.steps}
    assert not droppable(plan, by_id["a"], set()), "b is needed and reads a"
    assert not droppable(plan, by_id["b"], set()), "not optional"
    assert droppable(plan, by_id["c"], set())
    assert droppable(plan, by_id["d"], set())
    assert not droppable(plan, by_id["c"], {"c"}), "already left out"


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


class _Counter:
    def __init__(self, added: list[tuple[str, dict[str, str]]], name: str) -> None:
        self._added, self._name = added, name

    def add(self, value: int, attributes: dict[str, str]) -> None:
        self._added.extend([(self._name, attributes)] * value)


class _Meter:
    def __init__(self) -> None:
        self.added: list[tuple[str, dict[str, str]]] = []

    def create_counter(self, name: str, description: str) -> _Counter:
        return _Counter(self.added, name)


def test_speculative_reads_and_deadlines_are_counted() -> None:
    from agentkeel.schemas.deadline import DeadlineDecision, DeadlineReport
    from agentkeel.schemas.result import AgentResult
    from agentkeel.schemas.speculation import SpeculationReport, SpeculativeCall
    from agentkeel.workflows.metrics import observe_ahead

    result = AgentResult.model_validate(
        {
            "answer": "a",
            "plan": {"steps": []},
            "route": {"intent": "x", "tier": "light", "confidence": 0.5},
            "cache": "miss",
        }
    )
    result.speculation = SpeculationReport(
        calls=[
            SpeculativeCall(tool="get_order", outcome=SpeculationOutcome.USED),
            SpeculativeCall(tool="find_customer", outcome=SpeculationOutcome.UNUSED),
        ]
    )
    result.deadline = DeadlineReport(
        budget_ms=500,
        met=True,
        decisions=[DeadlineDecision(kind=DecisionKind.TIER, detail="light")],
    )
    meter = _Meter()
    observe_ahead(meter, result)  # type: ignore[arg-type]
    assert meter.added == [
        ("agentkeel_speculative_calls", {"outcome": "used"}),
        ("agentkeel_speculative_calls", {"outcome": "speculative_unused"}),
        ("agentkeel_deadline_runs", {"met": "true"}),
        ("agentkeel_deadline_decisions", {"kind": "tier"}),
    ]
