"""Whether a plan may run at all, decided before the scheduler sees it.

Each rule is checked in workflow code against the run's own facts (its options, its
actor's request as the router read it), never against anything a model or a cache wrote.
A plan that fails one is rejected whole with a named, non-retryable error that `join`
sees: nothing of it runs.
"""

from __future__ import annotations

from agentkeel.schemas import errors
from agentkeel.schemas.plan.model import Plan
from agentkeel.schemas.request import RunOptions
from agentkeel.schemas.result import StepError
from agentkeel.schemas.tools import SIDE_EFFECT_TOOLS


def refuse_plan(
    plan: Plan,
    options: RunOptions,
    allowed_effects: frozenset[str],
    *,
    limits: bool = True,
    read_only: bool = False,
) -> StepError | None:
    """The reason this run may not run `plan`, or None.

    `limits=False` replays a run recorded before the size and side-effect rules: only the
    read-only rule, which it had, applies. `read_only`: the run's own reason to make no
    side effect (a schedule that was not allowed to), besides the request's.
    """
    if limits and len(plan.steps) > options.max_plan_steps:
        return _refused(
            errors.PLAN_TOO_LARGE,
            f"the plan has {len(plan.steps)} steps; this run allows {options.max_plan_steps}",
        )
    # Unknown tools are left to validation, which names them (`UnknownTool`).
    effects = [s for s in plan.steps if s.tool in SIDE_EFFECT_TOOLS]
    if effects and (options.read_only or read_only):
        ids = ", ".join(s.id for s in effects)
        why = "this run is read-only" if options.read_only else _SCHEDULED_READ_ONLY
        return _refused(errors.SIDE_EFFECT_NOT_ALLOWED, f"steps {ids} have side effects; {why}")
    unasked = [s for s in effects if s.tool not in allowed_effects]
    if limits and unasked:
        listed = ", ".join(f"{s.id} ({s.tool})" for s in unasked)
        return _refused(
            errors.SIDE_EFFECT_NOT_REQUESTED,
            f"steps {listed} have side effects the request did not ask for",
        )
    return None


_SCHEDULED_READ_ONLY = "a schedule started this run and was not created with side effects allowed"


def _refused(error_type: str, message: str) -> StepError:
    return StepError(type=error_type, message=message, non_retryable=True)
