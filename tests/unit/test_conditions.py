"""Conditional steps (`when`): validated like every step, skipped with a reason when false."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from agentkeel.schemas.errors import INVALID_CONDITION, MISSING_REFERENCE
from agentkeel.schemas.plan.model import Condition, Plan
from agentkeel.schemas.plan.validation import PlanValidationError, validate_plan
from agentkeel.schemas.result import StepError, StepStatus
from agentkeel.schemas.tools import TOOLS
from agentkeel.workflows.dag.calls import ToolCall
from agentkeel.workflows.dag.scheduler import DagScheduler
from tests.support.dag import Clock, settle

UNSHIPPED = {"order_id": 1002, "status": "processing", "tracking_number": None, "items": []}
SHIPPED = {"order_id": 1001, "status": "shipped", "tracking_number": "TRK0000001001"}


def plan(*steps: dict[str, Any]) -> Plan:
    return Plan.model_validate({"steps": list(steps)})


ORDER = {"id": "s1", "tool": "get_order", "args": {"order_id": 1002}}
TRACK = {
    "id": "s2",
    "tool": "track_shipment",
    "args": {"tracking_number": "$s1.tracking_number"},
    "when": {"ref": "$s1.tracking_number", "is": "present"},
}


@pytest.mark.parametrize(
    ("when", "kind"),
    [
        ({"ref": "$item.x", "is": "present"}, INVALID_CONDITION),
        ({"ref": "$s9.tracking_number", "is": "present"}, MISSING_REFERENCE),
        ({"ref": "$s1.no_such_field", "in": ["shipped"]}, MISSING_REFERENCE),
    ],
)
def test_a_condition_must_test_an_earlier_steps_output(when: dict[str, Any], kind: str) -> None:
    with pytest.raises(PlanValidationError) as caught:
        validate_plan(plan(ORDER, {**TRACK, "when": when}), TOOLS)
    assert caught.value.kind == kind


@pytest.mark.parametrize(
    "when",
    [
        {"ref": "$s1.status"},
        {"ref": "$s1.status", "is": "present", "in": ["x"]},
        {"ref": "not a reference", "is": "present"},
        {"ref": "$s1.status", "is": "big"},
    ],
)
def test_a_malformed_condition_is_refused_by_the_plan_model(when: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        plan(ORDER, {**TRACK, "when": when})


def test_the_condition_makes_its_step_a_dependency_and_round_trips_as_json() -> None:
    steps = plan(ORDER, {**TRACK, "args": {"tracking_number": "TRK0000001001"}})
    assert validate_plan(steps, TOOLS)["s2"] == ["s1"]
    again = Plan.model_validate_json(steps.model_dump_json())
    assert again.steps[1].when == Condition(ref="$s1.tracking_number", is_="present")
    assert '"is":"present"' in steps.model_dump_json()


async def _run(steps: Plan, outputs: dict[str, Any]) -> dict[str, Any]:
    async def dispatch(call: ToolCall) -> Any:
        return outputs[call.step_id]

    def describe(error: BaseException) -> StepError:
        return StepError(type=type(error).__name__, message=str(error))

    scheduler = DagScheduler(steps, TOOLS, dispatch=dispatch, now=Clock(), describe_error=describe)
    task = asyncio.create_task(scheduler.run())
    await settle()
    return {o.id: o for o in await task}


async def test_a_false_condition_skips_the_step_and_its_dependants_without_failing() -> None:
    after = {"id": "s3", "tool": "search_kb", "args": {"query": "$s2.status"}}
    out = await _run(plan(ORDER, TRACK, after), {"s1": UNSHIPPED})
    assert out["s1"].status == StepStatus.SUCCEEDED
    assert out["s2"].status == StepStatus.SKIPPED and out["s2"].error is None
    assert out["s2"].skipped_because == "$s1.tracking_number is absent"
    assert out["s3"].status == StepStatus.SKIPPED and out["s3"].error is None
    assert "s2" in (out["s3"].skipped_because or "")
    assert all(o.as_planned for o in out.values())


async def test_a_true_condition_runs_the_step() -> None:
    shipped_order = {**ORDER, "args": {"order_id": 1001}}
    tracking = {"tracking_number": "TRK0000001001", "carrier": "x", "status": "in_transit"}
    out = await _run(plan(shipped_order, TRACK), {"s1": SHIPPED, "s2": tracking})
    assert out["s2"].status == StepStatus.SUCCEEDED
    assert out["s2"].args == {"tracking_number": "TRK0000001001"}


async def test_an_in_condition_tests_membership() -> None:
    kb = {"id": "s2", "tool": "search_kb", "args": {"query": "shipping times"}}
    when_shipped = {**kb, "when": {"ref": "$s1.status", "in": ["shipped", "delivered"]}}
    hits = {"query": "shipping times", "hits": []}
    skipped = await _run(plan(ORDER, when_shipped), {"s1": UNSHIPPED, "s2": hits})
    assert skipped["s2"].skipped_because == (
        "$s1.status is 'processing', not one of ['shipped', 'delivered']"
    )
    ran = await _run(plan(ORDER, when_shipped), {"s1": SHIPPED, "s2": hits})
    assert ran["s2"].status == StepStatus.SUCCEEDED
