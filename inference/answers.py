"""What the model-free policies answer: step outcomes in plain language (their respond step),
and the route and plan of a policy that recognised nothing.

Each tool's results are put in words by the tool's own `render` in the catalog, so this
module names no tool: a new tool is described by its catalog entry.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import UTC, datetime

from agentkeel.schemas.errors import NO_PLANNER
from agentkeel.schemas.model_calls import PlanResult, RespondInput, RespondResult, RouteResult
from agentkeel.schemas.plan.model import Plan
from agentkeel.schemas.result import StepError, StepOutcome, StepStatus
from agentkeel.schemas.route import ConfidenceBasis, Route, Tier
from agentkeel.schemas.tools import TOOLS


def render_step(step: StepOutcome) -> str:
    if step.output is None and step.output_ref is not None:
        ref = step.output_ref
        size = f"{ref.items} results" if ref.items is not None else f"{ref.bytes} bytes"
        return f"{step.tool} ({step.id}) returned {size}, kept as {ref.ref}."
    if step.status == StepStatus.SUCCEEDED:
        text = _render_output(step)
        return f"After {step.runs} checks: {text}" if step.runs > 1 else text
    if step.status == StepStatus.TIMED_OUT:
        last = f" The last check said: {_render_output(step)}" if step.output else ""
        why = step.error.message if step.error else "its watch ran out of time"
        return f"I stopped watching ({why}).{last}"
    if step.status == StepStatus.SKIPPED and step.skipped_because:
        return f"I did not need {step.tool} ({step.id}): {step.skipped_because}."
    if step.status == StepStatus.SKIPPED:
        return f"I skipped {step.tool} ({step.id}) because a step it needed did not succeed."
    message = step.error.message if step.error else "unknown error"
    return f"I could not complete {step.tool} ({step.id}): {message}."


def _render_output(step: StepOutcome) -> str:
    spec = TOOLS.get(step.tool)
    render = spec.render if spec is not None else None
    if render is None:
        return f"{step.tool}: {step.output}"
    outputs = step.output if isinstance(step.output, list) else [step.output]
    return " ".join(render(o) for o in outputs if isinstance(o, dict))


def render_answer(request: RespondInput) -> str:
    if request.plan_error is not None and not request.steps:
        return (
            "I could not build a valid plan for this request "
            f"({request.plan_error.type}: {request.plan_error.message})."
        )
    if not request.steps:
        return "I have no information to answer that."
    return " ".join(render_step(step) for step in request.steps)


async def rendered_response(
    request: RespondInput, sink: Callable[[str], Awaitable[None]] | None = None
) -> RespondResult:
    """The respond step of a model-free policy: the tools' renderings, whole, as one piece
    on the token stream (rendered in microseconds, like a one-token answer)."""
    answer = render_answer(request)
    first_at = datetime.now(UTC)
    if sink is not None:
        await sink(answer)
    return RespondResult(answer=answer, first_token_at=first_at)


def unsure_route(reason: str) -> RouteResult:
    """The route of a model-free policy that recognised nothing: unsure, no draft plan."""
    route = Route(
        intent="unknown",
        confidence=0.0,
        basis=ConfidenceBasis.RULES,
        tier=Tier.RULES,
        reason=reason,
    )
    return RouteResult(route=route, confident=False, draft_plan=None)


def no_plan(message: str, rationale: str) -> PlanResult:
    """A model-free policy's plan step when it has none to give (`NoPlanner`): the round's
    plan is empty and the answer says why."""
    error = StepError(type=NO_PLANNER, message=message, non_retryable=True)
    return PlanResult(plan=Plan(rationale=rationale), tier=Tier.RULES, error=error)
