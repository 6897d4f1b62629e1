"""The `join` node: did the round's steps answer the request, or is another plan needed?

Asked only where a step failed or the plan was refused (every step succeeded: finish,
without a model). Where a replan may follow, the next plan is asked for beside the join
(`replan-ahead-v1`, `options.replan_ahead`): the planner gets the same failed round it
would get after the join, so a `replan` finds its plan already written (or being
written) and the run pays one model stage for the failure, not two; a `finish` cancels
it, its tokens spent for nothing (so a run under a budget asks after the join, as before).
A decision that stands (a declined approval, an actor who may not, a watch over its quota)
finishes without asking.
"""

from __future__ import annotations

import asyncio
from typing import Any

from temporalio import workflow

from agentkeel.schemas import errors, names
from agentkeel.schemas.model_calls import JoinDecision, JoinInput, JoinResult, PlanInput, PlanResult
from agentkeel.schemas.result import StepOutcome
from agentkeel.workflows import timeouts
from agentkeel.workflows.nodes.ahead import end_speculation
from agentkeel.workflows.nodes.model_calls import asked, call_model, noted
from agentkeel.workflows.plan_stream import PlanWindow, wanted
from agentkeel.workflows.release import since
from agentkeel.workflows.state import AgentState
from agentkeel.workflows.visibility import add_timing

REPLAN_AHEAD_PATCH = "replan-ahead-v1"
"""Runs started before it asked for the next plan only once the join said `replan`."""


async def join(state: AgentState) -> dict[str, Any]:
    request = state["request"]
    replans = state.get("replans", 0)
    current = [s for s in state.get("steps", []) if s.attempt == replans]
    if state.get("plan_error") is None and all(s.as_planned for s in current):
        # Nothing to judge: every step succeeded. Asking a model would only add latency.
        return {"decision": JoinDecision.FINISH}
    if any(s.error is not None and s.error.type in errors.DECISIONS_THAT_STAND for s in current):
        # An approver said no, or the actor may not: another plan must not get around it.
        return {"decision": JoinDecision.FINISH}
    started = workflow.now()
    may_replan = replans < request.options.max_replans
    ahead = None
    # Not under a run budget: the join's tokens decide what the next plan may spend.
    wanted = may_replan and request.options.replan_ahead and request.options.budget is None
    if wanted and since(REPLAN_AHEAD_PATCH):
        ahead = asyncio.ensure_future(_plan_again(state, current, replans + 1))
    try:
        joined: JoinResult = await call_model(
            state,
            names.JOIN,
            JoinInput(
                question=request.question,
                plan=state["plan"],
                steps=current,
                plan_error=state.get("plan_error"),
                replans=replans,
                max_replans=request.options.max_replans,
                route=state["route"],
                tenant=request.tenant,
                usage_key=request.usage_key,
            ),
            JoinResult,
            timeouts.JOIN_TIMEOUT,
            summary="join",
        )
    except BaseException:
        await _drop(ahead)
        raise
    # The planner, not the scheduler, may spend a replan; the cap is enforced here too.
    replan = joined.decision == JoinDecision.REPLAN and may_replan
    update: dict[str, Any] = {"decision": JoinDecision.REPLAN if replan else JoinDecision.FINISH}
    if replan:
        update["replans"] = replans + 1
        update["previous_plan"] = state["plan"]
        if ahead is not None:
            update["replanned"] = await ahead  # the plan node takes it: no second call
    elif ahead is not None:
        await _drop(ahead)
        # Reads its stream started, which no step will take: cancelled and reported.
        ended = await end_speculation(state, [])
        update.update(ended)
        if "timings" in ended:
            state["timings"] = ended["timings"]
    update["timings"] = add_timing(state, "plan", started)
    return noted(state, update, joined)


async def _plan_again(state: AgentState, failed: list[StepOutcome], attempt: int) -> PlanResult:
    """The plan of round `attempt`, as the plan node would ask for it after the join; its
    reads start as it is written (`workflows.plan_stream`), to be adopted by its steps, or
    cancelled if the join says `finish`."""
    stream = wanted(state)
    async with PlanWindow(state["context"], open_=stream):
        return await call_model(
            state,
            names.PLAN,
            PlanInput(
                **asked(state),
                route=state["route"],
                attempt=attempt,
                previous_steps=failed,
                plan_error=state.get("plan_error"),
                stream_steps=stream,
                patch=state["request"].options.replan_patch,
            ),
            PlanResult,
            timeouts.PLAN_TIMEOUT,
            summary=f"plan round {attempt}, beside the join",
        )


async def _drop(ahead: asyncio.Future[PlanResult] | None) -> None:
    if ahead is not None:
        ahead.cancel()
        await asyncio.gather(ahead, return_exceptions=True)
