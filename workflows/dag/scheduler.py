"""The DAG scheduler: runs a validated plan with eager dispatch under caps.

It is independent of Temporal: the workflow injects `dispatch` (a tool
activity) and `now` (workflow time); the benchmark injects plain coroutines.
Completion order is the only input that drives it, so inside a workflow it is
as deterministic as the history that delivers those completions.

This module runs the calls (tasks, slots, pauses, cancellation); what each step is at,
which calls are ready and what a finished call means for its step is `StepBook`'s.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

from agentkeel.schemas.errors import CANCELLED
from agentkeel.schemas.plan.model import Plan, PlanStep
from agentkeel.schemas.progress import Waiting
from agentkeel.schemas.result import StepError, StepOutcome, StepStatus
from agentkeel.schemas.tools import WAIT, ToolSpec
from agentkeel.workflows.dag.calls import (
    DescribeError,
    Dispatch,
    OnWait,
    Sleep,
    ToolCall,
    plain_sleep,
)
from agentkeel.workflows.dag.slots import Pauses, Slots
from agentkeel.workflows.dag.step_book import StepBook
from agentkeel.workflows.dag.step_gates import SchedulerLimits
from agentkeel.workflows.dag.watches import (
    FirstWait,
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
        first_wait: FirstWait | None = None,
    ) -> None:
        """`step_failures`: exceptions of `dispatch` that fail a step (inside a workflow,
        `ActivityError`); anything else is a bug or a cancellation and ends `run()` with it.

        `resume`: this plan's outcomes from the run this one continues (outputs resolved):
        finished steps keep their results, and watches pick up where they were.
        `first_wait`: asked before a watch first waits (`watches.run_watch`).
        """
        self._first_wait = first_wait
        self._tools = tools
        self._dispatch = dispatch
        self._sleep = sleep
        self._on_wait = on_wait or (lambda step_id, waiting: None)
        self._step_failures = step_failures
        self._cancel_on_abort = cancel_in_flight
        self._now = now
        self._limits = limits or SchedulerLimits()
        self._book = StepBook(
            plan,
            tools,
            now=now,
            describe_error=describe_error,
            limits=self._limits,
            attempt=attempt,
        )
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
        self.watch_runs = 0
        """Runs of repeated steps in this scheduler (see `limits.runs_before_continue`)."""
        self._book.resume(resume)

    @property
    def outcomes(self) -> dict[str, StepOutcome]:
        """Every step's outcome by id, as it stands (the run's result, once it is over)."""
        return self._book.outcomes

    @property
    def calls_started(self) -> int:
        """Tool calls expanded so far (each counts against `limits.max_calls`)."""
        return self._book.calls_started

    @property
    def suspended(self) -> list[str]:
        """Watches that stopped for the run to continue as new; they are still RUNNING."""
        return self._book.suspended

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
            self._book.release_ready_steps()
            while self._live or self._book.ready:
                self._launch_within_caps()
                call, output, error = await self._done.get()
                if isinstance(error, _Abort):
                    raise error.cause
                if call is None:  # a watch went to sleep: its slot is free for others
                    continue
                self._live -= 1
                self._slots.give_back(call.call_id, call.tool)
                self._book.record(call, output, error)
                self._book.release_ready_steps()
        except BaseException:
            # A cancellation (or a bug) ends the run: calls in flight are cancelled and
            # waited for, so no side effect is still on its way when the run is over.
            if self._cancel_on_abort:
                await self._cancel_in_flight()
            raise
        return self._book.in_plan_order()

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
                self._book.record(call, output, error)
        cancelled = StepError(type=CANCELLED, message="cancelled with the run", non_retryable=True)
        for outcome in self.outcomes.values():
            if outcome.status is StepStatus.RUNNING:
                self._book.fail(outcome, cancelled.model_copy())

    # -- dispatch -----------------------------------------------------------------------------
    def _launch_within_caps(self) -> None:
        for call in self._book.ready.startable(self._fits, self._slots_full):
            # A timer loads nothing: a `wait` never waits for a slot, nor holds one.
            self._start(call, slot=call.tool != WAIT.name)

    def _fits(self, call: ToolCall) -> bool:
        return call.tool == WAIT.name or self._slots.fits(call.tool)

    def _slots_full(self) -> bool:
        return self._slots.total >= self._limits.max_concurrency

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
        step = self._book.steps[call.step_id]
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
                first_wait=self._first_wait,
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
