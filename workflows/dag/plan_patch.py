"""A replan that patches the round before it (`options.replan_patch`).

The planner writes only the steps to replace (by id) or to add. The round's other steps
are kept: a step that finished (succeeded, or a watch that timed out) keeps its outcome
(handed to the scheduler as finished, never run again), a step skipped behind a failure
(`DependencyFailed`) or left waiting runs as it was written once its inputs are there. A
step that failed is dropped unless the patch writes it again (the same call would fail
again), and so is a step skipped for another reason (a deadline left it out, its `when`
did not hold) and any kept step whose inputs are no longer in the plan. So a wide plan
with one bad read costs a one-step decode, and a chain whose first link was wrong costs
that link, not the chain again. The merged plan is checked whole, as any plan is, before
anything runs; its answer template is the patch's, else the round before's, where every
step it names is in the merged plan.
"""

from __future__ import annotations

from agentkeel.schemas.plan.answer_template import template_problem
from agentkeel.schemas.plan.model import Plan, PlanStep
from agentkeel.schemas.plan.patch_check import FINISHED, kept_by_patch
from agentkeel.schemas.plan.validation import dependencies
from agentkeel.schemas.result import StepOutcome

REPLAN_PATCH_PATCH = "replan-patch-v1"
"""Runs started before it ran each replan's plan as written, whatever the option said."""


def patched_plan(
    previous: Plan, outcomes: list[StepOutcome], patch: Plan, attempt: int
) -> tuple[Plan, list[StepOutcome]]:
    """The round's plan (kept steps, then the patch's) and the kept finished outcomes to
    take over (tagged with this round's `attempt`)."""
    written = {step.id for step in patch.steps}
    by_id = {outcome.id: outcome for outcome in outcomes}

    def keeps(step: PlanStep) -> bool:
        outcome = by_id.get(step.id)
        if step.id in written or outcome is None:
            return False
        return kept_by_patch(outcome)

    kept = _with_inputs([step for step in previous.steps if keeps(step)], written)
    kept_ids = {step.id for step in kept}
    carried = [
        outcome.model_copy(update={"attempt": attempt}, deep=True)
        for outcome in outcomes
        if outcome.id in kept_ids and outcome.status in FINISHED
    ]
    steps = [*kept, *patch.steps]
    ids = frozenset(step.id for step in steps)
    answer = next(
        (a for a in (patch.answer, previous.answer) if a and template_problem(a, ids) is None),
        None,
    )
    plan = Plan(steps=steps, rationale=patch.rationale or previous.rationale, answer=answer)
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
