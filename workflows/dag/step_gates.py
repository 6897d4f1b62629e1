"""What becomes of a step before any call of it starts: run, skip, or fail unstarted.

Pure decisions over the outcomes and outputs so far, kept apart from the scheduler's
dispatch loop: a step whose dependency failed is skipped for that failure; one whose
dependency was passed over by a condition, or whose own `when` is false, is skipped with a
reason (not a failure); one that would expand past the run's limits fails unstarted.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from agentkeel.schemas.errors import DEPENDENCY_FAILED, FAN_OUT_TOO_LARGE, TOOL_CALL_LIMIT
from agentkeel.schemas.plan.model import PlanStep
from agentkeel.schemas.result import StepError, StepOutcome, StepStatus
from agentkeel.workflows.dag.resolve import condition_value


@dataclass
class SchedulerLimits:
    max_concurrency: int = 5
    per_tool: Mapping[str, int] = field(default_factory=dict)
    max_fan_out: int | None = None
    """Longest list a `for_each` step may expand over; a longer one fails the step."""
    max_calls: int | None = None
    """Tool calls this plan may still start (the run's budget less earlier rounds')."""
    watch_every_s: float | None = None
    """Seconds between the runs of every watched step, overriding each step's `every_s`."""
    runs_before_continue: int | None = None
    """Runs of watched steps after which the watches stop for a continue-as-new."""
    partition_at: int | None = None
    """A `for_each` step of this many calls or more runs in child workflows (when nothing
    later reads its output): the run's own history stays small. None: never."""
    may_partition: Callable[[], bool] = lambda: True
    """Asked last, when a step would be partitioned (inside a workflow: a patch check)."""
    history_full: Callable[[], bool] = lambda: False
    """Whether the run's history asks for a continue-as-new now (Temporal suggests it)."""

    def __post_init__(self) -> None:
        # A cap below one would hold its steps back forever.
        if self.max_concurrency < 1 or any(cap < 1 for cap in self.per_tool.values()):
            raise ValueError("concurrency caps must be at least 1")


@dataclass(frozen=True)
class Skip:
    """The step does not run: with `error` it is skipped for a failure, else for `reason`."""

    reason: str | None = None
    error: StepError | None = None


def before_running(
    step: PlanStep, deps: Sequence[StepOutcome], outputs: Mapping[str, Any]
) -> Skip | None:
    """Why `step`, whose dependencies `deps` are all done, must not run; None: it runs."""
    failed = [d.id for d in deps if not d.as_planned]
    if failed:
        message = f"skipped because {', '.join(failed)} did not succeed"
        return Skip(error=StepError(type=DEPENDENCY_FAILED, message=message, non_retryable=True))
    passed_over = [d for d in deps if d.passed_over]
    if passed_over:  # skipped by a condition or a watch that ran out: so is this step
        why = ", ".join(f"{d.id}, which {_passed_over_how(d)}" for d in passed_over)
        return Skip(reason=f"it needs {why}")
    if step.when is not None:
        value = condition_value(step.when, outputs)
        if not step.when.holds(value):
            return Skip(reason=step.when.unmet(value))
    return None


def _passed_over_how(step: StepOutcome) -> str:
    if step.status is StepStatus.TIMED_OUT:
        return "timed out watching"
    return "was skipped"


def over_limits(
    step: PlanStep, calls: int, started: int, limits: SchedulerLimits
) -> StepError | None:
    """Why expanding `step` into `calls` calls, after `started` others, passes the limits."""
    if step.for_each is not None and limits.max_fan_out is not None:
        if calls > limits.max_fan_out:
            message = (
                f"step {step.id}: for_each expands to {calls} calls, "
                f"more than this run's limit of {limits.max_fan_out}"
            )
            return StepError(type=FAN_OUT_TOO_LARGE, message=message, non_retryable=True)
    if limits.max_calls is not None and started + calls > limits.max_calls:
        message = (
            f"step {step.id}: {calls} more tool calls would pass the run's limit "
            f"({limits.max_calls - started} left)"
        )
        return StepError(type=TOOL_CALL_LIMIT, message=message, non_retryable=True)
    return None
