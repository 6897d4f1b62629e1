"""Reads started as the planner writes them, before its plan is whole.

While a planning activity runs (the plan stage, or the route when it plans beside the
router), the inference worker signals each complete step that is a cached, idempotent
read needing no other step's output (`inference.llm.plan_stream`, `activities.plan_signals`).
The run takes each such `plan_step` signal as a speculative call of the round
(`workflows.speculation`): checked here again against the catalog (the model's text is
untrusted input: an unknown tool, arguments the tool refuses, a side effect, a call over
the run's tool-call limit or the round's cap are dropped), then started as the activity a
step would run, with the run's actor. When the plan arrives, the steps that make the
same calls adopt them; every other one is cancelled and reported `speculative_unused`,
never as a step of the run. So a plan decoded again (a rejected decode, a retried
activity) or replaced (a replan, the router's draft serving instead) never runs what it
no longer says, and side effects wait for the whole plan, its validation and its gates,
exactly as without streaming.

Durable: each signal is an event in the run's history, and a call is started at most once
per round, however many times a retried activity signals it. Signals outside a planning
activity's window are dropped. Asked by the run, not imposed: the activity streams only
where the input says `stream_steps` (`wanted`), and the first call taken asks
`PLAN_STREAM_PATCH`, so a history without it replays as it ran.
"""

from __future__ import annotations

import asyncio
from typing import Any

from pydantic import ValidationError

from agentkeel.schemas.speculation import MAX_SPECULATIVE_CALLS, PredictedCall, may_run_ahead
from agentkeel.schemas.tools import TOOLS, ToolSpec
from agentkeel.workflows.dag.resolve import resolve
from agentkeel.workflows.dag.run_context import RunContext
from agentkeel.workflows.release import since
from agentkeel.workflows.speculation import Speculation, step_signature
from agentkeel.workflows.state import AgentState

PLAN_STREAM_PATCH = "plan-stream-v1"
"""Reads a planner has written start before its plan is whole."""


def wanted(state: AgentState) -> bool:
    """Whether this run takes early reads from its planners: runs that speculate
    (`options.speculate`), under the authority rules, with no deadline (a deadline decides
    on the whole plan which steps to leave out and which reads may be stale, and an early
    read would pre-empt that)."""
    context = state["context"]
    options = state["request"].options
    return context.authority and options.speculate and options.deadline_ms is None


class PlanWindow:
    """`async with PlanWindow(context, open_=...)`: early reads are taken inside only."""

    def __init__(self, context: RunContext, *, open_: bool) -> None:
        self._context, self._open = context, open_

    async def __aenter__(self) -> None:
        self._context.planning = self._open

    async def __aexit__(self, *_: Any) -> None:
        self._context.planning = False


def take(context: RunContext | None, call: PredictedCall) -> bool:
    """Start `call` as a speculative read of the round, if the run takes it now (a call
    that reads earlier streamed steps starts once they have returned); whether it was
    taken."""
    if context is None or not context.planning:
        return False  # no planner is writing this run's plan: a late or stray signal
    spec = TOOLS.get(call.tool)
    if spec is None or not may_run_ahead(spec):
        return False  # never a side effect, whatever the model wrote
    if call.after:
        return _take_after(context, spec, call)
    try:
        args = spec.checked_args(call.args)
    except ValidationError:
        return False
    pool = context.speculation
    if pool is not None and pool.holds(spec.name, args):
        _name_step(pool, call, pool.task_of(spec.name, args))
        return False  # this very call already taken (a re-sent signal, a decode again)
    if not _room(context) or not since(PLAN_STREAM_PATCH):
        return False
    if pool is None:
        pool = context.speculation = Speculation()
    task = _start(context, pool, spec, args)
    _name_step(pool, call, task)
    return task is not None


def _name_step(pool: Speculation, call: PredictedCall, task: asyncio.Task[Any] | None) -> None:
    """Remember which task gives step `call.step`'s result, for the steps that read it. A
    plan decoded again numbers its steps afresh: the latest decode's step wins."""
    if call.step is None:
        return
    if task is None:
        pool.by_step.pop(call.step, None)
    else:
        pool.by_step[call.step] = (step_signature(call), task)


def _room(context: RunContext) -> bool:
    """Room for one more early read: the round's cap and the run's tool-call limit."""
    pool = context.speculation
    if pool is not None and pool.streamed >= MAX_SPECULATIVE_CALLS:
        return False
    return context.calls_used < context.request.options.max_tool_calls


def _start(
    context: RunContext, pool: Speculation, spec: ToolSpec, args: dict[str, Any]
) -> asyncio.Task[Any] | None:
    """Start the read of `args` (checked) in `pool`; its task, or None if it did not start."""
    request = context.request
    before = pool.started
    pool.start(
        [PredictedCall(tool=spec.name, args=args)],
        context.tool_queue,
        request.actor.model_dump(mode="json"),
        request.tenant,
        allowed=may_run_ahead,
    )
    started = pool.started - before
    pool.streamed += started
    context.calls_used += started  # it counts against the run's tool-call limit
    return pool.task_of(spec.name, args) if started else None


def _take_after(context: RunContext, spec: ToolSpec, call: PredictedCall) -> bool:
    """A read whose arguments read earlier streamed steps: taken now, started once they
    return (its references resolved against their results, then checked like any call)."""
    pool = context.speculation
    if pool is None or call.step is None:
        return False  # nothing it reads started early
    taken = pool.by_step.get(call.step)
    if taken is not None and taken[0] == step_signature(call):
        return False  # this very step taken already (a re-sent signal)
    waits = [pool.by_step.get(step) for step in call.after]
    if any(wait is None for wait in waits) or not _room(context):
        pool.by_step.pop(call.step, None)
        return False
    if not since(PLAN_STREAM_PATCH):
        return False
    ready = [wait[1] for wait in waits if wait is not None]
    task = asyncio.ensure_future(_when_ready(context, pool, spec, call, ready))
    pool.by_step[call.step] = (step_signature(call), task)
    pool.waiting.append(task)
    return True


class _Dropped(Exception):
    """An early read that will not start (the plan came first, or its arguments do not
    check out once resolved): the plan's own step makes the call."""


async def _when_ready(
    context: RunContext,
    pool: Speculation,
    spec: ToolSpec,
    call: PredictedCall,
    waits: list[asyncio.Task[Any]],
) -> Any:
    results = await asyncio.gather(*waits)  # a failed read fails its readers too
    if not context.planning or context.speculation is not pool or not _room(context):
        raise _Dropped  # the whole plan is here: its steps run as the scheduler says
    resolved = resolve(call.args, dict(zip(call.after, results, strict=True)))
    try:
        args = spec.checked_args(resolved)
    except ValidationError:
        raise _Dropped from None
    if pool.holds(spec.name, args):
        task = pool.task_of(spec.name, args)
    else:
        task = _start(context, pool, spec, args)
    if task is None:
        raise _Dropped
    return await task
