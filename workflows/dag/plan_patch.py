"""A replan that patches the round before it (`options.replan_patch`).

The planner writes only the steps to replace (by id) or to add. The round's other steps
are kept: a step that succeeded keeps its result (handed to the scheduler as a finished
outcome, never run again), a step that never ran (skipped behind a failure, or left
waiting) runs as it was written once its inputs are there. A step that failed is dropped
unless the patch writes it again (the same call would fail again), and so is any kept step
whose inputs are no longer in the plan. So a wide plan with one bad read costs a one-step
decode, and a chain whose first link was wrong costs that link, not the chain again. The
merged plan is checked whole, as any plan is, before anything runs.
"""

from __future__ import annotations

from agentkeel.schemas.plan.model import Plan, PlanStep
from agentkeel.schemas.plan.validation import dependencies
from agentkeel.schemas.result import StepOutcome, StepStatus

REPLAN_PATCH_PATCH = "replan-patch-v1"
"""Runs started before it ran each replan's plan as written, whatever the option said."""
_KEPT = (StepStatus.SUCCEEDED, StepStatus.SKIPPED, StepStatus.PENDING)


def patched_plan(
    previous: Plan, outcomes: list[StepOutcome], patch: Plan, attempt: int
) -> tuple[Plan, list[StepOutcome]]:
    """The round's plan (kept steps, then the patch's) and the kept steps' outcomes to
    take over (those that succeeded, tagged with this round's `attempt`)."""
    written = {step.id for step in patch.steps}
    status = {outcome.id: outcome.status for outcome in outcomes}
    kept = _with_inputs(
        [s for s in previous.steps if s.id not in written and status.get(s.id) in _KEPT],
        written,
    )
    kept_ids = {step.id for step in kept}
    carried = [
        outcome.model_copy(update={"attempt": attempt}, deep=True)
        for outcome in outcomes
        if outcome.id in kept_ids and outcome.status is StepStatus.SUCCEEDED
    ]
    plan = Plan(
        steps=[*kept, *patch.steps],
        rationale=patch.rationale or previous.rationale,
        answer=patch.answer or previous.answer,
    )
    return plan, carried


def _with_inputs(kept: list[PlanStep], written: set[str]) -> list[PlanStep]:
    """The kept steps whose every input is still in the plan (to a fixpoint: a dropped
    step drops what read it)."""
    while True:
        present = written | {step.id for step in kept}
        still = [step for step in kept if all(d in present for d in dependencies(step))]
        if len(still) == len(kept):
            return still
        kept = still
