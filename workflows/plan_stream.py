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

from typing import Any

from pydantic import ValidationError
from temporalio import workflow

from agentkeel.schemas.speculation import MAX_SPECULATIVE_CALLS, PredictedCall, may_run_ahead
from agentkeel.schemas.tools import TOOLS
from agentkeel.workflows.dag.run_context import RunContext
from agentkeel.workflows.speculation import Speculation
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
    """Start `call` as a speculative read of the round, if the run takes it now; whether
    it started."""
    if context is None or not context.planning:
        return False  # no planner is writing this run's plan: a late or stray signal
    spec = TOOLS.get(call.tool)
    if spec is None or not may_run_ahead(spec):
        return False  # never a side effect, whatever the model wrote
    try:
        args = spec.args_model.model_validate(call.args).model_dump(mode="json", exclude_unset=True)
    except ValidationError:
        return False
    pool = context.speculation
    if pool is not None and (pool.streamed >= MAX_SPECULATIVE_CALLS or pool.holds(spec.name, args)):
        return False  # the round's cap, or this very call already taken (a re-sent signal)
    if context.calls_used >= context.request.options.max_tool_calls:
        return False
    if not workflow.patched(PLAN_STREAM_PATCH):
        return False
    if pool is None:
        pool = context.speculation = Speculation()
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
    return started > 0
