"""A replan that patches the round before it: which steps are kept, run again or dropped."""

from __future__ import annotations

from typing import Any

from agentkeel.schemas.errors import DEPENDENCY_FAILED
from agentkeel.schemas.plan.model import Plan
from agentkeel.schemas.result import StepError, StepOutcome, StepStatus
from agentkeel.workflows.dag.plan_patch import patched_plan


def _plan(*steps: dict[str, Any], answer: str | None = None) -> Plan:
    return Plan.model_validate({"steps": list(steps), "answer": answer})


def _outcome(step_id: str, status: StepStatus, why: str | None = None) -> StepOutcome:
    """An outcome; a skipped one skipped behind a failed input unless `why` says else."""
    if status is StepStatus.SKIPPED:
        why = why or DEPENDENCY_FAILED
    error = StepError(type=why, message=why) if why else None
    return StepOutcome(
        id=step_id, tool="t", args={}, status=status, output={"x": step_id}, error=error
    )


ORDER = {"id": "s1", "tool": "get_order", "args": {"order_id": 10_001_002}}
ITEM = {"id": "s2", "tool": "check_inventory", "args": {"sku": "$s1.items.0.sku"}}
KB = {"id": "s3", "tool": "search_kb", "args": {"query": "returns"}}
PARCEL = {"id": "s4", "tool": "track_shipment", "args": {"tracking_number": "$s1.tracking"}}


def test_a_patch_replaces_the_failed_step_and_keeps_the_rest() -> None:
    previous = _plan(ORDER, ITEM, KB, answer="Found {$s3.query}.")
    outcomes = [
        _outcome("s1", StepStatus.FAILED),
        _outcome("s2", StepStatus.SKIPPED),
        _outcome("s3", StepStatus.SUCCEEDED),
    ]
    fixed = {**ORDER, "args": {"order_id": 1002}}
    plan, carried = patched_plan(previous, outcomes, _plan(fixed), attempt=1)
    assert [(s.id, s.args) for s in plan.steps] == [
        ("s2", ITEM["args"]),  # never ran: runs as written once s1 is back
        ("s3", KB["args"]),  # succeeded: kept with its result
        ("s1", {"order_id": 1002}),
    ]
    assert [(c.id, c.attempt, c.output) for c in carried] == [("s3", 1, {"x": "s3"})]
    assert plan.answer == "Found {$s3.query}.", "the round before's answer, the patch has none"


def test_a_failed_step_the_patch_leaves_out_is_dropped_with_what_reads_it() -> None:
    previous = _plan(ORDER, ITEM, KB, PARCEL)
    outcomes = [
        _outcome("s1", StepStatus.FAILED),
        _outcome("s2", StepStatus.SKIPPED),
        _outcome("s3", StepStatus.SUCCEEDED),
        _outcome("s4", StepStatus.SKIPPED),
    ]
    other = {"id": "s5", "tool": "search_kb", "args": {"query": "order lookup help"}}
    plan, carried = patched_plan(previous, outcomes, _plan(other, answer="A."), attempt=2)
    assert [s.id for s in plan.steps] == ["s3", "s5"]
    assert [c.id for c in carried] == ["s3"] and plan.answer == "A."


def test_a_patch_that_writes_every_step_again_is_a_new_plan() -> None:
    previous = _plan(ORDER, KB)
    outcomes = [_outcome("s1", StepStatus.FAILED), _outcome("s3", StepStatus.SUCCEEDED)]
    again = _plan({**ORDER, "args": {"order_id": 7}}, {**KB, "args": {"query": "x"}})
    plan, carried = patched_plan(previous, outcomes, again, attempt=1)
    assert [(s.id, s.args) for s in plan.steps] == [
        ("s1", {"order_id": 7}),
        ("s3", {"query": "x"}),
    ]
    assert carried == [], "a step written again runs again"


def test_a_step_a_deadline_left_out_stays_out_and_a_timed_out_watch_is_kept() -> None:
    previous = _plan(ORDER, KB, PARCEL, answer="Parcel {$s4.status}.")
    outcomes = [
        _outcome("s1", StepStatus.FAILED),
        _outcome("s3", StepStatus.SKIPPED, why="LeftOut"),
        _outcome("s4", StepStatus.TIMED_OUT),
    ]
    fixed = {**ORDER, "args": {"order_id": 1002}}
    plan, carried = patched_plan(previous, outcomes, _plan(fixed, answer="Gone {$s9.x}."), 1)
    assert [s.id for s in plan.steps] == ["s4", "s1"]
    assert [c.id for c in carried] == ["s4"]
    assert plan.answer == "Parcel {$s4.status}.", "the patch's names a step not in the plan"
