"""What a replan's patch can be refused for on its own, before the run merges it.

The run checks the merged plan whole (`workflows.dag.plan_patch`), and a patch it refuses
costs the run a planning round. The planner checks each decoded patch here first, inside
its own retries: its steps' tools and arguments, and that every step they read is in the
patch or kept from the round before (`kept_by_patch`: a step that failed is kept only if
the patch writes it again). What only the merged plan can show (a kept step dropped with
an input) is left to the run.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from pydantic import ValidationError

from agentkeel.schemas.errors import (
    DEPENDENCY_CYCLE,
    DEPENDENCY_FAILED,
    DUPLICATE_STEP,
    MISSING_REFERENCE,
)
from agentkeel.schemas.plan.arguments import check_arguments
from agentkeel.schemas.plan.model import Plan, PlanStep
from agentkeel.schemas.plan.references import PlanValidationError
from agentkeel.schemas.plan.validation import check_tool, dependencies
from agentkeel.schemas.result import StepOutcome, StepStatus
from agentkeel.schemas.tools.spec import ToolSpec

FINISHED = (StepStatus.SUCCEEDED, StepStatus.TIMED_OUT)
"""Outcomes a patch keeps as they are."""


def kept_as_written(outcome: StepOutcome) -> bool:
    """A step that never ran because an input failed, or that was still waiting."""
    if outcome.status is StepStatus.PENDING:
        return True
    blocked = outcome.error is not None and outcome.error.type == DEPENDENCY_FAILED
    return outcome.status is StepStatus.SKIPPED and blocked


def kept_by_patch(outcome: StepOutcome) -> bool:
    """Whether the round's step stays when a patch does not write it again."""
    return outcome.status in FINISHED or kept_as_written(outcome)


def check_patch(
    patch: Plan, previous: Sequence[StepOutcome], tools: Mapping[str, ToolSpec]
) -> None:
    """Raises `PlanValidationError`, the first problem of the patch's own steps in order."""
    written: dict[str, PlanStep] = {}
    for step in patch.steps:
        if step.id in written:
            raise PlanValidationError(DUPLICATE_STEP, f"step id {step.id!r} is used twice")
        written[step.id] = step
        check_tool(step, tools)
    before = {outcome.id: outcome for outcome in previous}
    for step in patch.steps:
        for dep in dependencies(step):
            if dep == step.id:
                raise PlanValidationError(DEPENDENCY_CYCLE, f"step {step.id}: depends on itself")
            if dep in written or (dep in before and kept_by_patch(before[dep])):
                continue
            why = "is not kept and not written again" if dep in before else "is in no round"
            raise PlanValidationError(
                MISSING_REFERENCE, f"step {step.id}: depends on step {dep!r}, which {why}"
            )
    by_id = {**_kept_steps(previous, tools), **written}
    for step in patch.steps:
        check_arguments(step, by_id, tools)


def _kept_steps(
    previous: Sequence[StepOutcome], tools: Mapping[str, ToolSpec]
) -> dict[str, PlanStep]:
    """The round's kept steps as far as a patch's references need them: their tools."""
    kept: dict[str, PlanStep] = {}
    for outcome in previous:
        if outcome.tool in tools and kept_by_patch(outcome):
            try:
                kept[outcome.id] = PlanStep(id=outcome.id, tool=outcome.tool)
            except ValidationError:
                continue  # (an id no plan step has: nothing can read it)
    return kept
