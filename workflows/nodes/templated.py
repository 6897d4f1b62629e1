"""The answer the plan wrote (`Plan.answer`), filled from its outputs with no model call."""

from __future__ import annotations

from agentkeel.schemas.plan.answer_template import fill
from agentkeel.schemas.result import StepStatus
from agentkeel.workflows.state import AgentState


def templated_answer(state: AgentState) -> str | None:
    """The plan's answer template filled from this round's outputs, or None when the
    respond step must write the answer: no template, a step that did not succeed (its
    error or skip must be explained), a rejected plan, steps left out for a deadline, an
    output kept by reference, or a placeholder that is not a plain value."""
    plan = state.get("plan")
    if plan is None or plan.answer is None or state.get("plan_error") is not None:
        return None
    deadline = state["context"].deadline
    if deadline is not None and (deadline.left_out or deadline.refused is not None):
        return None
    replans = state.get("replans", 0)
    current = [s for s in state.get("steps", []) if s.attempt == replans]
    if {s.id for s in current} != {s.id for s in plan.steps}:
        return None
    if any(s.status is not StepStatus.SUCCEEDED or s.output is None for s in current):
        return None
    return fill(plan.answer, {s.id: s.output for s in current})
