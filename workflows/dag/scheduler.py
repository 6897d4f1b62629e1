"""The DAG scheduler: runs a validated plan with eager dispatch under caps.

It is independent of Temporal: the workflow injects `dispatch` (a tool
activity) and `now` (workflow time); the benchmark injects plain coroutines.
Completion order is the only input that drives it, so inside a workflow it is
as deterministic as the history that delivers those completions.
"""

from __future__ import annotations

import asyncio
import heapq
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

from agentkeel.schemas.errors import CANCELLED, INVALID_ARGUMENTS
from agentkeel.schemas.plan.model import Plan, PlanStep
from agentkeel.schemas.plan.validation import critical_path_ms, validate_plan
from agentkeel.schemas.progress import Waiting
from agentkeel.schemas.result import OutputRef, StepError, StepOutcome, StepStatus
from agentkeel.schemas.tools import WAIT, ToolSpec
from agentkeel.workflows.dag.calls import (
    DescribeError,
    Dispatch,
    OnWait,
    Sleep,
    ToolCall,
    plain_sleep,
)
from agentkeel.workflows.dag.expansion import calls_of, runs_apart
from agentkeel.workflows.dag.resolve import ResolutionError
from agentkeel.workflows.dag.slots import Pauses, Slots
from agentkeel.workflows.dag.step_gates import SchedulerLimits, before_running, over_limits
from agentkeel.workflows.dag.watches import (
    StepFailed,
    Suspended,
    WatchTimedOut,
    run_wait,
    run_watch,
)


class _Abort(Exception):
    """Carries an exception that must end the whole run, not one step."""

    def __init__(self, cause: BaseException) -> None:
        super().__init__(repr(cause))
        self.cause = cause


_TERMINAL = (StepStatus.SUCCEEDED, StepStatus.FAILED, StepStatus.SKIPPED, StepStatus.TIMED_OUT)


class DagScheduler:
    """Runs one plan. Call `run()` once; read outcomes from its result."""

    def __init__(
        self,
        plan: Plan,
        tools: Mapping[str, ToolSpec],
        *,
        dispatch: Dispatch,
        now: Callable[[], datetime],
        describe_error: DescribeError,
        limits: SchedulerLimits | None = None,
        attempt: int = 0,
        step_failures: tuple[type[BaseException], ...] = (Exception,),
        cancel_in_flight: bool = True,
        sleep: Sleep = plain_sleep,
        on_wait: OnWait | None = None,
        resume: Sequence[StepOutcome] = (),
    ) -> None:
        """`step_failures`: exceptions of `dispatch` that fail a step (inside a workflow,
        `ActivityError`); anything else is a bug or a cancellation and ends `run()` with it.

        `resume`: this plan's outcomes from the run this one continues (outputs resolved):
        finished steps keep their results, and watches pick up where they were.
        """
        self._plan = plan
        self._tools = tools
        self._dispatch = dispatch
        self._sleep = sleep
        self._on_wait = on_wait or (lambda step_id, waiting: None)
        self._step_failures = step_failures
        self._cancel_on_abort = cancel_in_flight
        self._now = now
        self._describe_error = describe_error
        self._limits = limits or SchedulerLimits()
        self._deps = validate_plan(plan, tools)
        self._priority = critical_path_ms(plan, self._deps, tools)
        self._dependants = {
            s.id: [o.id for o in plan.steps if s.id in self._deps[o.id]] for s in plan.steps
        }
        self._order = {s.id: i for i, s in enumerate(plan.steps)}
        self._steps = {s.id: s for s in plan.steps}
        self.outcomes = {
            s.id: StepOutcome(id=s.id, tool=s.tool, attempt=attempt) for s in plan.steps
        }
        self._outputs: dict[str, Any] = {}
        self._item_results: dict[str, list[Any]] = {}
        self._expanded: set[str] = set()
        self._open_calls: dict[str, int] = {}
        self._ready: list[tuple[int, int, int, ToolCall]] = []
        self._slots = Slots(
            self._limits.max_concurrency,
            lambda tool: self._limits.per_tool.get(tool, self._tools[tool].max_concurrency),
        )
        self._pauses = Pauses(sleep)
        self._live = 0
        """Calls started and not yet reported (a sleeping watch holds no slot but is live)."""
        self._done: asyncio.Queue[tuple[ToolCall | None, Any, BaseException | None]] = (
            asyncio.Queue()
        )
        self._tasks: set[asyncio.Task[None]] = set()
        self.calls_started = 0
        """Tool calls expanded so far (each counts against `limits.max_calls`)."""
        self.watch_runs = 0
        """Runs of repeated steps in this scheduler (see `limits.runs_before_continue`)."""
        self.suspended: list[str] = []
        """Watches that stopped for the run to continue as new; they are still RUNNING."""
        self._resume(resume)

    def _resume(self, earlier: Sequence[StepOutcome]) -> None:
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

    @property
    def max_observed_concurrency(self) -> int:
        return self._slots.max_observed

    @property
    def continuing(self) -> bool:
        """Whether watches must stop for the run to continue as new."""
        limit = self._limits.runs_before_continue
        return bool(limit is not None and self.watch_runs >= limit) or self._limits.history_full()

    async def run(self) -> list[StepOutcome]:
        try:
            self._release_ready_steps()
            while self._live or self._ready:
                self._launch_within_caps()
                call, output, error = await self._done.get()
                if isinstance(error, _Abort):
                    raise error.cause
                if call is None:  # a watch went to sleep: its slot is free for others
                    continue
                self._live -= 1
                self._slots.give_back(call.call_id, call.tool)
                self._record(call, output, error)
                self._release_ready_steps()
        except BaseException:
            # A cancellation (or a bug) ends the run: calls in flight are cancelled and
            # waited for, so no side effect is still on its way when the run is over.
            if self._cancel_on_abort:
                await self._cancel_in_flight()
            raise
        return [self.outcomes[s.id] for s in self._plan.steps]

    async def _cancel_in_flight(self) -> None:
        pending = [task for task in self._tasks if not task.done()]
        for task in pending:
            task.cancel()
        if pending:
            await asyncio.gather(*pending, return_exceptions=True)
        # What finished meanwhile is recorded (a side effect that committed before its
        # cancel arrived is a fact the run's record must keep); the rest was cancelled.
        while not self._done.empty():
            call, output, error = self._done.get_nowait()
            if call is not None and not isinstance(error, _Abort):
                self._record(call, output, error)
        cancelled = StepError(type=CANCELLED, message="cancelled with the run", non_retryable=True)
        for outcome in self.outcomes.values():
            if outcome.status is StepStatus.RUNNING:
                self._fail(outcome, cancelled.model_copy())

    # -- readiness ----------------------------------------------------------------------------
    def _release_ready_steps(self) -> None:
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
            self._fail(outcome, error)
            return
        outcome.args = calls[0].args if step.for_each is None else [c.args for c in calls]
        resumed = outcome.started_at is not None  # carried over: counted when first expanded
        refused = over_limits(step, len(calls), self.calls_started, self._limits)
        if refused is not None and not resumed:
            self._fail(outcome, refused)
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
            key = (-self._priority[step.id], self._order[step.id], seq, call)
            heapq.heappush(self._ready, key)

    def _fail(self, outcome: StepOutcome, error: StepError) -> None:
        """A step that ends here, before (or instead of) its calls finishing."""
        outcome.status, outcome.error = StepStatus.FAILED, error
        outcome.finished_at = self._now()
        outcome.started_at = outcome.started_at or outcome.finished_at

    # -- dispatch -----------------------------------------------------------------------------
    def _launch_within_caps(self) -> None:
        held: list[tuple[int, int, int, ToolCall]] = []
        while self._ready:
            entry = heapq.heappop(self._ready)
            call = entry[3]
            if call.tool == WAIT.name:  # a timer loads nothing: it never waits for a slot
                self._start(call, slot=False)
            elif self._slots.fits(call.tool):
                self._start(call)
            else:
                held.append(entry)
                if self._slots.total >= self._limits.max_concurrency:
                    break
        for entry in held:
            heapq.heappush(self._ready, entry)

    def _start(self, call: ToolCall, *, slot: bool = True) -> None:
        outcome = self.outcomes[call.step_id]
        if outcome.status is StepStatus.PENDING:
            # Pending until its first call holds a slot: a step queued behind a cap isn't running.
            outcome.status = StepStatus.RUNNING
            outcome.started_at = outcome.started_at or self._now()
        self._live += 1
        if slot:
            self._slots.take(call.call_id, call.tool)
        task = asyncio.get_running_loop().create_task(self._run_call(call))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _run_call(self, call: ToolCall) -> None:
        # Whatever happens, something reaches `_done`, so `run()` can never wait forever.
        try:
            output = await self._call(call)
        except (Suspended, WatchTimedOut, StepFailed) as exc:
            self._done.put_nowait((call, None, exc))
        except self._step_failures as exc:
            self._done.put_nowait((call, None, exc))
        except BaseException as exc:  # a bug or a cancellation: run() re-raises it
            self._done.put_nowait((call, None, _Abort(exc)))
        else:
            self._done.put_nowait((call, output, None))

    async def _call(self, call: ToolCall) -> Any:
        step = self._steps[call.step_id]
        outcome = self.outcomes[step.id]
        if call.tool == WAIT.name:
            return await run_wait(
                step.id,
                call.args,
                outcome,
                now=self._now,
                sleep=self._pauses.sleep,
                on_wait=self._waits(step),
            )
        if step.repeat is not None:
            return await run_watch(
                step,
                outcome,
                lambda: self._dispatch(call),
                every=timedelta(seconds=self._limits.watch_every_s or step.repeat.every_s),
                now=self._now,
                sleep=lambda duration, summary: self._sleep_without_slot(call, duration, summary),
                on_wait=self._waits(step),
                ran=self._count_watch_run,
            )
        return await self._dispatch(call)

    async def _sleep_without_slot(self, call: ToolCall, duration: timedelta, summary: str) -> bool:
        """A watch between two reads: its slot goes to others until it reads again."""
        if self._slots.give_back(call.call_id, call.tool):
            self._done.put_nowait((None, None, None))  # wake `run()` to launch what fits now
        if not await self._pauses.sleep(duration, summary):
            return False
        await self._slots.take_when_free(call.call_id, call.tool)
        return True

    def _waits(self, step: PlanStep) -> Callable[[Waiting | None], None]:
        return lambda waiting: self._on_wait(step.id, waiting)

    def _count_watch_run(self) -> bool:
        """One more run of a watch; whether the watches must now stop for a continue-as-new
        (then every sleeping watch and wait stops too)."""
        self.watch_runs += 1
        if self.continuing:
            self._pauses.stop_all()
        return self.continuing

    def _drop_queued(self, step_id: str) -> None:
        """One element of a for_each step failed: its calls still queued need not run."""
        kept = [entry for entry in self._ready if entry[3].step_id != step_id]
        self._open_calls[step_id] -= len(self._ready) - len(kept)
        self._ready = kept
        heapq.heapify(self._ready)

    def _record(self, call: ToolCall, output: Any, error: BaseException | None) -> None:
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
                self._drop_queued(call.step_id)
        self._item_results[call.step_id][call.index or 0] = output
        self._open_calls[call.step_id] -= 1
        if self._open_calls[call.step_id]:
            return
        outcome.finished_at = self._now()
        if outcome.error is not None:
            outcome.status = StepStatus.FAILED
            return
        step = self._steps[call.step_id]
        results = self._item_results.pop(call.step_id)
        if call.batch is not None:  # kept by reference: no later step reads it
            outcome.output_ref = OutputRef.model_validate(results[0])
            outcome.status = StepStatus.SUCCEEDED
            return
        outcome.output = results if step.for_each is not None else results[0]
        outcome.status = StepStatus.SUCCEEDED
        self._outputs[call.step_id] = outcome.output
