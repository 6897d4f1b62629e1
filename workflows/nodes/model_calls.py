"""The graph's model-facing nodes: route, plan, join, respond.

Each runs inline in the workflow and calls one typed activity: a local activity of the CPU
worker where its policy needs no model (the rules), else an activity on the inference
worker pool. Calling typed activities from workflow-side nodes (rather than letting the
plugin turn each node into an activity over the whole state) keeps one input and one
result model per activity in history, sends each activity only what it needs, and lets
every node measure its layer in workflow time.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any, TypeVar

from pydantic import BaseModel
from temporalio import workflow

from agentkeel.schemas import names
from agentkeel.schemas.model_calls import (
    LocalPolicyResult,
    PlanInput,
    PlanResult,
    RespondInput,
    RespondResult,
    RouteInput,
    RouteResult,
)
from agentkeel.schemas.plan.model import Plan
from agentkeel.schemas.route import Route
from agentkeel.schemas.tools.catalog import requested_side_effects
from agentkeel.workflows import timeouts
from agentkeel.workflows.budget import BudgetDecision, add_usage, budget_gate
from agentkeel.workflows.nodes.ahead import before_planning, given_reads, refused
from agentkeel.workflows.nodes.run_record import stop_for_budget
from agentkeel.workflows.nodes.templated import templated_answer
from agentkeel.workflows.plan_stream import PlanWindow, wanted
from agentkeel.workflows.release import since
from agentkeel.workflows.state import AgentState
from agentkeel.workflows.visibility import add_timing, elapsed_ms, publish_route, stage

ResultT = TypeVar("ResultT", bound=BaseModel)


async def call_model(
    state: AgentState,
    activity: str,
    request: BaseModel,
    result_type: type[ResultT],
    start_to_close: timedelta,
    *,
    summary: str,
) -> ResultT:
    """One policy step: on this worker where its policy needs no model, else one model
    activity on the inference pool (heartbeating, retried as models are)."""
    context = state["context"]
    decision, request = budget_gate(context, request)
    if decision is BudgetDecision.STOP:
        await stop_for_budget(state)  # raises `BudgetExhausted`
    if context.local_policy is not False:
        local: LocalPolicyResult[Any] = await workflow.execute_local_activity(
            names.LOCAL_POLICY_STEPS[activity],
            request,
            result_type=LocalPolicyResult[result_type],  # type: ignore[valid-type]
            start_to_close_timeout=start_to_close,
            retry_policy=timeouts.MODEL_RETRY,
            summary=summary,
        )
        # Asked once per run: a worker without a model-free policy says so at the first step.
        context.local_policy = local.result is not None
        context.local_tools = local.tools_here
        if local.result is not None:
            answered: ResultT = local.result
            add_usage(context, answered)
            return answered
    result: ResultT = await workflow.execute_activity(
        activity,
        request,
        result_type=result_type,
        task_queue=state["inference_queue"],
        start_to_close_timeout=start_to_close,
        heartbeat_timeout=timeouts.MODEL_HEARTBEAT,
        retry_policy=timeouts.MODEL_RETRY,
        summary=summary,
    )
    add_usage(context, result)
    return result


def noted(state: AgentState, update: dict[str, Any], answered: Any) -> dict[str, Any]:
    """`update` with what the step's answer asks the run's result to say (a fallback)."""
    if answered.warnings:
        update["warnings"] = [*state.get("warnings", []), *answered.warnings]
    if answered.fallback:
        update["degraded"] = True  # a stand-in's answer is not kept for the next asker
    return update


def asked(state: AgentState) -> dict[str, Any]:
    """The fields of `ModelCallInput`: the question and whose conversation it belongs to."""
    request = state["request"]
    return {
        "question": request.question,
        "tenant": request.tenant,
        "conversation_id": request.conversation_id,
        "audience": request.actor.audience,
        "usage_key": request.usage_key,
    }


def _allow_effects_of(state: AgentState, route: Route) -> None:
    """Which side effects the request asked for, by this reading of the request itself.

    Only the router's reading counts (runs recorded before `EFFECT_RULES_PATCH` also took
    the first plan's when it re-routed): a planner has read tool output and earlier turns,
    and text in those must never be able to ask for a side effect.
    """
    state["context"].allowed_effects = requested_side_effects(route.intent)


BUDGET_ROUTES_FIRST_PATCH = "budget-routes-first-v1"
"""Runs under a budget started before it planned beside the router, as any run: a sure
route then threw the planner's tokens away, and they counted against the run's budget."""


async def route(state: AgentState) -> dict[str, Any]:
    stage(state, "routing")
    started = workflow.now()
    options = state["request"].options
    ahead = options.deadline_ms is None
    if ahead and options.budget is not None and since(BUDGET_ROUTES_FIRST_PATCH):
        ahead = False  # the run pays for its planner's tokens: spent only once it is needed
    stream = ahead and wanted(state)  # a plan made beside the router streams its reads too
    async with PlanWindow(state["context"], open_=stream):
        routed: RouteResult = await call_model(
            state,
            names.ROUTE,
            RouteInput(
                **asked(state),
                plan_ahead=ahead,
                stream_steps=stream,
                started_reads=given_reads(state),
            ),
            RouteResult,
            timeouts.ROUTE_TIMEOUT,
            summary="route",
        )
    publish_route(state, routed.route)
    _allow_effects_of(state, routed.route)
    update: dict[str, Any] = {
        "route": routed.route,
        "confident": routed.confident and routed.draft_plan is not None,
        "timings": add_timing(state, "route", started),
    }
    if routed.draft_plan is not None:
        update["plan"] = routed.draft_plan
    if routed.speculate and not update["confident"]:
        update["speculate"] = routed.speculate
    if routed.planned is not None and not update["confident"]:
        # Planned beside the router: the plan stage is already done.
        update = noted(state, update, routed)
        planned = _with_plan(state, routed.planned)
        if "warnings" in update and "warnings" in planned:
            planned["warnings"] = [*update["warnings"], *routed.planned.warnings]
        return {**update, **planned, "planned_ahead": True}
    return noted(state, update, routed)


def _with_plan(
    state: AgentState, planned: PlanResult, retiered: Route | None = None
) -> dict[str, Any]:
    """What a planner's answer puts in the state: its plan, its error, and its own reading
    of the request (the heavy tier read it itself), which is the run's route from now on."""
    update: dict[str, Any] = {
        "plan": planned.plan,
        "planner_error": planned.error,
        "patching": planned.patch,
    }
    if retiered is not None:
        update["route"] = retiered
    if planned.route is not None and retiered is None:
        publish_route(state, planned.route)
        if state.get("replans", 0) == 0 and not state["context"].effect_rules:
            # (Runs before `EFFECT_RULES_PATCH` let the planner's first reading decide;
            # now only the router's counts: a planner never labels its own plan.)
            _allow_effects_of(state, planned.route)
        update["route"] = planned.route
    return noted(state, update, planned)


async def plan(state: AgentState) -> dict[str, Any]:
    attempt = state.get("replans", 0)
    stage(state, f"planning (round {attempt})")
    started = workflow.now()
    replanned = state.get("replanned")
    if attempt > 0 and replanned is not None:  # written beside the join (`nodes.join`)
        update = _with_plan(state, replanned)
        return {**update, "replanned": None, "timings": add_timing(state, "plan", started)}
    retiered = await before_planning(state) if attempt == 0 else None
    if retiered is not None:  # the deadline leaves no time for the heavy tier
        publish_route(state, retiered)
        state["route"] = retiered
    if refused(state):  # not even the light tier fits: no plan is asked for
        return {
            "plan": Plan(rationale="no plan: the deadline cannot be met"),
            "planner_error": None,
            "timings": add_timing(state, "plan", started),
        }
    stream = wanted(state)  # reads start as the planner writes them (`workflows.plan_stream`)
    async with PlanWindow(state["context"], open_=stream):
        planned: PlanResult = await call_model(
            state,
            names.PLAN,
            PlanInput(
                **asked(state),
                route=state["route"],
                attempt=attempt,
                previous_steps=[s for s in state.get("steps", []) if s.attempt == attempt - 1],
                plan_error=state.get("plan_error"),
                stream_steps=stream,
                patch=attempt > 0 and state["request"].options.replan_patch,
                started_reads=given_reads(state) if attempt == 0 else [],
            ),
            PlanResult,
            timeouts.PLAN_TIMEOUT,
            summary=f"plan round {attempt}",
        )
    return {**_with_plan(state, planned, retiered), "timings": add_timing(state, "plan", started)}


def _stream_run_id(state: AgentState) -> str:
    """The run whose token stream the answer goes to: the run a client started, which it
    follows, even after the run continued as new (a watch that fired days later)."""
    info = workflow.info()
    return info.first_execution_run_id if state["progress"].continued else info.run_id


async def respond(state: AgentState) -> dict[str, Any]:
    stage(state, "writing the answer")
    started = workflow.now()
    replans = state.get("replans", 0)
    deadline = state["context"].deadline
    if deadline is not None and deadline.refused is not None:
        # Said at once: no model call, the reason is the answer.
        return {"answer": deadline.refused, "timings": add_timing(state, "respond", started)}
    written = templated_answer(state)
    if written is not None:
        # The plan wrote the answer and every fact it names is here: no model stage.
        timings = add_timing(state, "respond", started)
        return {"answer": written, "answer_templated": True, "timings": timings}
    extra = (
        {"left_out": list(deadline.left_out)} if deadline is not None and deadline.left_out else {}
    )
    answered: RespondResult = await call_model(
        state,
        names.RESPOND,
        RespondInput(
            **asked(state),
            route=state["route"],
            steps=[s for s in state.get("steps", []) if s.attempt == replans],
            plan_error=state.get("plan_error"),
            run_id=_stream_run_id(state),
            **extra,
        ),
        RespondResult,
        timeouts.RESPOND_TIMEOUT,
        summary="respond",
    )
    timings = add_timing(state, "respond", started)
    if answered.first_token_at is not None:
        # Wall clocks of two machines: clamped, so skew never reports a negative TTFT.
        ttft = (answered.first_token_at - state["started_at"]).total_seconds() * 1000
        timings.ttft = min(max(ttft, 0.0), elapsed_ms(state["started_at"]))
    return noted(state, {"answer": answered.answer, "timings": timings}, answered)
