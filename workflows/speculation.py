"""Speculative tool execution: reads started before the plan that will make them exists.

A question often names what its first reads need (an id, an email): those reads are
predicted with the cache lookup and start at the run's first moment, beside the router
and the planner (`EARLY_SPECULATION_PATCH`; runs recorded before it started them only
when the router was unsure, while the heavy model planned). Only the reads the catalog
allows (`schemas.speculation.may_speculate`: cached, idempotent reads, never a side
effect) start, as the same activity a step would run, with the same actor. A plan step
that makes the same call (same tool, same resolved arguments) takes its result, awaiting
it if it is still running; a call no step makes is cancelled and reported
`speculative_unused`. Deterministic: the calls are activities in history and
the matching depends only on the plan and on completions.
"""

from __future__ import annotations

import asyncio
import functools
import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from pydantic import ValidationError
from temporalio import workflow
from temporalio.exceptions import (
    ActivityError,
    ApplicationError,
    CancelledError,
    RetryState,
    is_cancelled_exception,
)

from agentkeel.schemas.speculation import (
    MAX_SPECULATIVE_CALLS,
    PredictedCall,
    SpeculationOutcome,
    SpeculationReport,
    SpeculativeCall,
    call_key,
    given_id,
    may_speculate,
)
from agentkeel.schemas.tools import TOOLS, ToolSpec
from agentkeel.workflows.dag.calls import ToolCall
from agentkeel.workflows.dag.tool_activity import LocalToolFailed, execute_tool, with_tenant
from agentkeel.workflows.release import since

SPECULATION_PATCH = "speculation-v1"
"""Reads predicted by an unsure route start while the heavy model plans."""
EARLY_SPECULATION_PATCH = "early-speculation-v1"
"""Reads predicted by the cache lookup start at the run's first moment, beside the router
and the planner (asked only by runs with predicted reads)."""
GIVEN_READS_PATCH = "given-reads-v1"
"""The reads started from the request are given to the run's first planners as steps `p1`,
`p2`, ... (`Speculation.give`), and a streamed step reading one starts once it returns
(gathered by `release.FOURTH_RELEASE_PATCH`, asked at the run's start)."""
LOCAL_SPECULATION_PATCH = "local-speculation-v1"
"""Where the worker holding the run serves the policy steps and runs the reads itself, the
reads the request predicts run as its local activities, beside the route's: started at the
run's first moment like the policy step, not held until its workflow task ends (task-queue
activities are dispatched only then). Gathered by `release.FIFTH_RELEASE_PATCH`."""
FAILED_TWIN_PATCH = "speculation-failure-v1"
"""A twin that failed for good (non-retryable) is its step's failure, and one cancelled with
its step cancels it: the step does not make the same call again (asked only where such a
twin is claimed; before it, the step did)."""


@dataclass
class _Running:
    tool: str
    args: dict[str, Any]
    task: asyncio.Task[Any]
    started: datetime
    finished: datetime | None = None


def _finished(running: _Running, _: object) -> None:
    running.finished = workflow.now()


def _failed_for_good(failed: ActivityError | LocalToolFailed | CancelledError, tool: str) -> bool:
    """A non-retryable failure: the same call, made again, would fail the same way (a
    local twin's error says so by its flag or by a type its tool lists as non-retryable,
    as the retry state of a task-queue twin's does)."""
    if isinstance(failed, LocalToolFailed):
        cause = failed.failure
        return isinstance(cause, ApplicationError) and (
            cause.non_retryable or cause.type in TOOLS[tool].non_retryable_errors
        )
    if isinstance(failed, ActivityError):
        return failed.retry_state == RetryState.NON_RETRYABLE_FAILURE
    return False


def step_signature(call: PredictedCall) -> str:
    """What a named step is (tool, arguments, inputs): a step sent again is the same."""
    return json.dumps([call.tool, call.args, call.after], sort_keys=True)


class Speculation:
    """The speculative calls of one planning round, and what became of them."""

    def __init__(self) -> None:
        self._open: dict[str, _Running] = {}
        self.report = SpeculationReport()
        self.served: set[str] = set()
        """Step ids a speculative call served."""
        self.saved_ms = 0.0
        self._dropped: list[_Running] = []
        self._started = 0
        self.streamed = 0
        """Calls taken from a planner's stream this round (`workflows.plan_stream`)."""
        self.by_step: dict[str, tuple[str, asyncio.Task[Any]]] = {}
        """A streamed step's id -> what it was (tool, arguments, inputs) and what gives its
        result: its call, or (for a step that reads earlier ones) the wait for them and
        then its call."""
        self.waiting: list[asyncio.Task[Any]] = []
        """The waits of streamed steps that read earlier ones (ended with the round)."""
        self.given: list[PredictedCall] = []
        """The reads started from the request, as the planner is given them: steps `p1`,
        `p2`, ... of its plan (`inference.llm.given_reads`)."""

    def give(self) -> None:
        """Name the calls open now (the reads started from the request) `p1`, `p2`, ...,
        as the planner is given them, so a streamed step that reads one starts once it
        has returned (`workflows.plan_stream`). Only runs begun on a release that gathers
        `GIVEN_READS_PATCH` do (the caller asks it)."""
        self.given = [
            PredictedCall(tool=running.tool, args=running.args, step=given_id(i))
            for i, running in enumerate(self._open.values())
        ]
        for call, running in zip(self.given, self._open.values(), strict=True):
            self.by_step[str(call.step)] = (step_signature(call), running.task)

    def holds(self, tool: str, args: dict[str, Any]) -> bool:
        """Whether the call is open here (started, not yet claimed by a step)."""
        return call_key(tool, args) in self._open

    def task_of(self, tool: str, args: dict[str, Any]) -> asyncio.Task[Any] | None:
        """The task of an open call (its result is the tool's output)."""
        running = self._open.get(call_key(tool, args))
        return None if running is None else running.task

    def start(
        self,
        predicted: list[PredictedCall],
        tool_queue: str,
        actor: Any,
        tenant: str,
        *,
        allowed: Callable[[ToolSpec], bool] = may_speculate,
        local: bool = False,
    ) -> int:
        """Start the calls the catalog allows (`allowed`), as `actor` of `tenant`; how many
        are open (started and not yet claimed). `local`: fast reads as local activities of
        this worker (`ToolSpec.local_read`)."""
        for call in predicted[:MAX_SPECULATIVE_CALLS]:
            spec = TOOLS.get(call.tool)
            if spec is None or not allowed(spec):
                continue  # never a side effect, whatever a reading proposes
            try:  # in the form a step's resolved arguments take, so they compare equal
                args = spec.checked_args(call.args)
            except ValidationError:
                continue
            key = call_key(spec.name, args)
            if key in self._open:
                continue
            payload = with_tenant({**args, "actor": actor}, tenant)
            text = ", ".join(f"{k}={v!r}" for k, v in args.items())
            summary = f"speculative: {spec.name}({text})"
            here = local and spec.local_read
            # A local twin is tried once: it holds its workflow task while it runs, and a
            # step whose twin failed makes the call itself, retried as the tool says.
            attempts = {"max_attempts": 1} if here else {}
            task = asyncio.ensure_future(
                execute_tool(spec, payload, tool_queue, summary, local=here, **attempts)
            )
            running = _Running(spec.name, args, task, workflow.now())
            task.add_done_callback(functools.partial(_finished, running))
            self._open[key] = running
            self._started += 1
        return len(self._open)

    def claim(self, call: ToolCall) -> _Running | None:
        """The speculative call that is `call`, if one runs or ran (each serves one call)."""
        if call.watch or call.batch is not None:
            return None  # a watch reads the source each time; a batch runs in children
        return self._open.pop(call_key(call.tool, call.args), None)

    async def serve(self, running: _Running, call: ToolCall) -> tuple[bool, Any]:
        """`(True, result)` from `call`'s speculative twin; `(False, None)` when the twin
        failed in a way the step's own call may not (cancelled, out of retries), so the
        step makes the call itself. A twin that failed for good (a non-retryable error:
        the order does not exist) raises that failure as the step's: the same call,
        made again, would only fail the same way one round trip later."""
        asked = workflow.now()
        try:
            result = await running.task
        except (ActivityError, LocalToolFailed, CancelledError) as failed:
            # (A local twin cancelled resolves as a bare `CancelledError`.)
            self._report(running, SpeculationOutcome.FAILED, step_id=call.call_id)
            # Failed for good, or cancelled with the step that waited for it.
            final = _failed_for_good(failed, running.tool)
            if (final or is_cancelled_exception(failed)) and since(FAILED_TWIN_PATCH):
                raise
            return False, None
        done_by = running.finished if running.finished is not None else asked
        saved = max((min(done_by, asked) - running.started).total_seconds() * 1000, 0.0)
        # The calls ran side by side: the run gained the longest head start, not their sum.
        self.saved_ms = max(self.saved_ms, saved)
        self.served.add(call.step_id)
        self._report(running, SpeculationOutcome.USED, step_id=call.call_id, saved_ms=saved)
        return True, result

    def _report(
        self,
        running: _Running,
        outcome: SpeculationOutcome,
        *,
        step_id: str | None = None,
        saved_ms: float = 0.0,
        cancelled: bool = False,
    ) -> None:
        self.report.calls.append(
            SpeculativeCall(
                tool=running.tool,
                args=running.args,
                outcome=outcome,
                step_id=step_id,
                saved_ms=round(saved_ms, 1),
                cancelled=cancelled,
            )
        )

    def prune(self, tools: set[str]) -> None:
        """The plan has arrived: cancel at once the calls of tools it never makes (the
        others wait for their steps, whose arguments may resolve only later)."""
        for key, running in list(self._open.items()):
            if running.tool not in tools:
                self._cancel(self._open.pop(key))

    def _cancel(self, running: _Running) -> None:
        cancelled = not running.task.done()
        if cancelled:
            running.task.cancel()
        self._dropped.append(running)
        self._report(running, SpeculationOutcome.UNUSED, cancelled=cancelled)

    @property
    def started(self) -> int:
        """Calls started this round (each counts against the run's tool-call limit)."""
        return self._started

    async def finish(self) -> SpeculationReport:
        """Cancel what no step used (and wait for it); the report of every call."""
        for waiting in self.waiting:
            waiting.cancel()  # a read still waiting for its inputs never starts now
        for running in list(self._open.values()):
            self._cancel(running)
        self._open = {}
        await asyncio.gather(*self.waiting, return_exceptions=True)
        await asyncio.gather(*(r.task for r in self._dropped), return_exceptions=True)
        return self.report
