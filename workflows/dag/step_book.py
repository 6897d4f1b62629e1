"""The book of one plan's steps: which are ready, which calls each expands to, and what
each ended with as its calls report.

Synchronous and free of I/O: the scheduler (`workflows.dag.scheduler`) runs the calls and
hands each result here; everything this book decides follows from the plan and the order
in which results arrive, so it is as deterministic as the history that delivers them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any

from agentkeel.schemas.errors import INVALID_ARGUMENTS
from agentkeel.schemas.plan.model import Plan, PlanStep
from agentkeel.schemas.plan.validation import critical_path_ms, validate_plan
from agentkeel.schemas.result import OutputRef, StepError, StepOutcome, StepStatus
from agentkeel.schemas.tools import ToolSpec
from agentkeel.workflows.dag.calls import DescribeError, ToolCall
from agentkeel.workflows.dag.expansion import calls_of, runs_apart
from agentkeel.workflows.dag.ready_calls import ReadyCalls
from agentkeel.workflows.dag.resolve import ResolutionError
from agentkeel.workflows.dag.step_gates import SchedulerLimits, before_running, over_limits
from agentkeel.workflows.dag.watches import StepFailed, Suspended, WatchTimedOut

_TERMINAL = (StepStatus.SUCCEEDED, StepStatus.FAILED, StepStatus.SKIPPED, StepStatus.TIMED_OUT)


class StepBook:
    """The outcome of every step of one plan, and the calls ready to start (`ready`)."""

    def __init__(
        self,
        plan: Plan,
        tools: Mapping[str, ToolSpec],
        *,
        now: Callable[[], datetime],
        describe_error: DescribeError,
        limits: SchedulerLimits,
        attempt: int,
    ) -> None:
        self._plan = plan
        self._tools = tools
        self._now = now
        self._describe_error = describe_error
        self._limits = limits
        self._deps = validate_plan(plan, tools)
        self._priority = critical_path_ms(plan, self._deps, tools)
        self._dependants = {
            s.id: [o.id for o in plan.steps if s.id in self._deps[o.id]] for s in plan.steps
        }
        self._order = {s.id: i for i, s in enumerate(plan.steps)}
        self.steps = {s.id: s for s in plan.steps}
        self.outcomes = {
            s.id: StepOutcome(id=s.id, tool=s.tool, attempt=attempt) for s in plan.steps
        }
        self._outputs: dict[str, Any] = {}
        self._item_results: dict[str, list[Any]] = {}
        self._expanded: set[str] = set()
        self._open_calls: dict[str, int] = {}
        self.ready = ReadyCalls()
        self.calls_started = 0
        """Tool calls expanded so far (each counts against `limits.max_calls`)."""
        self.suspended: list[str] = []
        """Watches that stopped for the run to continue as new; they are still RUNNING."""

    def resume(self, earlier: Sequence[StepOutcome]) -> None:
        """Take over the outcomes of the run this one continues (outputs resolved)."""
        for before in earlier:
            if before.id not in self.outcomes:
                continue
            outcome = before.model_copy(deep=True)
            self.outcomes[before.id] = outcome
            if outcome.status in _TERMINAL:
                self._expanded.add(before.id)
                if outcome.status is StepStatus.SUCCEEDED:
                    self._outputs[before.id] = outcome.output
            else:  # a watch between two runs: it expands again and sleeps until its next run
                outcome.status = StepStatus.PENDING

    def in_plan_order(self) -> list[StepOutcome]:
        return [self.outcomes[s.id] for s in self._plan.steps]

    # -- readiness ----------------------------------------------------------------------------
    def release_ready_steps(self) -> None:
        """Expand every pending step whose dependencies are all terminal (repeat to fixpoint)."""
        changed = True
        while changed:
            changed = False
            for step in self._plan.steps:
                outcome = self.outcomes[step.id]
                if outcome.status is not StepStatus.PENDING or step.id in self._expanded:
                    continue
                deps = [self.outcomes[d] for d in self._deps[step.id]]
                if any(d.status in (StepStatus.PENDING, StepStatus.RUNNING) for d in deps):
                    continue
                changed = True
                skip = before_running(step, deps, self._outputs)
                if skip is None:
                    self._expand(step)
                elif skip.error is not None:
                    outcome.status, outcome.error = StepStatus.SKIPPED, skip.error
                else:
                    outcome.status, outcome.skipped_because = StepStatus.SKIPPED, skip.reason
                    outcome.started_at = outcome.finished_at = self._now()

    def _expand(self, step: PlanStep) -> None:
        outcome = self.outcomes[step.id]
        self._expanded.add(step.id)
        try:
            calls = calls_of(step, self._outputs, self._tools)
        except (ResolutionError, ValueError) as exc:
            error = StepError(type=INVALID_ARGUMENTS, message=str(exc), non_retryable=True)
            self.fail(outcome, error)
            return
        outcome.args = calls[0].args if step.for_each is None else [c.args for c in calls]
        resumed = outcome.started_at is not None  # carried over: counted when first expanded
        refused = over_limits(step, len(calls), self.calls_started, self._limits)
        if refused is not None and not resumed:
            self.fail(outcome, refused)
            return
        self.calls_started += 0 if resumed else len(calls)
        spec = self._tools[step.tool]
        if runs_apart(
            step, len(calls), spec, self._limits, read_later=bool(self._dependants[step.id])
        ):
            batch = tuple(c.args for c in calls)
            calls = [ToolCall(step.id, step.tool, {}, batch=batch, round=outcome.attempt)]
        if not calls:  # an empty list expands to nothing: done at once
            outcome.status = StepStatus.SUCCEEDED
            outcome.output = []
            outcome.started_at = outcome.finished_at = self._now()
            self._outputs[step.id] = []
            return
        self._open_calls[step.id] = len(calls)
        self._item_results[step.id] = [None] * len(calls)
        for seq, call in enumerate(calls):
            self.ready.add(
                call, critical_path_ms=self._priority[step.id], order=self._order[step.id], seq=seq
            )

    def fail(self, outcome: StepOutcome, error: StepError) -> None:
        """A step that ends here, before (or instead of) its calls finishing."""
        outcome.status, outcome.error = StepStatus.FAILED, error
        outcome.finished_at = self._now()
        outcome.started_at = outcome.started_at or outcome.finished_at

    # -- results ------------------------------------------------------------------------------
    def record(self, call: ToolCall, output: Any, error: BaseException | None) -> None:
        """One call ended (`error` None: with `output`); its step ends with its last call."""
        outcome = self.outcomes[call.step_id]
        if isinstance(error, Suspended):
            # Still watching: the step stays RUNNING (with its next run) for the next run.
            self._open_calls[call.step_id] -= 1
            self._item_results.pop(call.step_id, None)
            self.suspended.append(call.step_id)
            return
        if isinstance(error, WatchTimedOut):
            self._open_calls[call.step_id] -= 1
            self._item_results.pop(call.step_id, None)
            outcome.status, outcome.output, outcome.error = (
                StepStatus.TIMED_OUT,
                error.last_output,
                error.error,
            )
            outcome.finished_at, outcome.next_run_at = self._now(), None
            return
        if error is not None and outcome.error is None:
            outcome.error = (
                error.error.model_copy()
                if isinstance(error, StepFailed)
                else self._describe_error(error)
            )
            if call.index is not None:
                outcome.error.message = f"{call.call_id}: {outcome.error.message}"
                # One element failed: its calls still queued need not run.
                self._open_calls[call.step_id] -= self.ready.drop(call.step_id)
        self._item_results[call.step_id][call.index or 0] = output
        self._open_calls[call.step_id] -= 1
        if self._open_calls[call.step_id]:
            return
        outcome.finished_at = self._now()
        if outcome.error is not None:
            outcome.status = StepStatus.FAILED
            return
        step = self.steps[call.step_id]
        results = self._item_results.pop(call.step_id)
        if call.batch is not None:  # kept by reference: no later step reads it
            outcome.output_ref = OutputRef.model_validate(results[0])
            outcome.status = StepStatus.SUCCEEDED
            return
        outcome.output = results if step.for_each is not None else results[0]
        outcome.status = StepStatus.SUCCEEDED
        self._outputs[call.step_id] = outcome.output
