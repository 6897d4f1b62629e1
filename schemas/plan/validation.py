"""Plan validation and the static structure of a plan's DAG.

Pure functions over `schemas/`: deterministic, so they run inside the workflow,
and cheap enough to run before any tool is dispatched. Every problem is a
`PlanValidationError` whose `kind` names it; the workflow reports it to `join`
as a non-retryable error.
"""

from __future__ import annotations

from collections.abc import Mapping

from agentkeel.schemas.errors import (
    DEPENDENCY_CYCLE,
    DUPLICATE_STEP,
    EMPTY_PLAN,
    MISSING_REFERENCE,
    UNKNOWN_TOOL,
)
from agentkeel.schemas.plan.answer_template import template_problem
from agentkeel.schemas.plan.arguments import check_arguments
from agentkeel.schemas.plan.model import Plan, PlanStep
from agentkeel.schemas.plan.references import PlanValidationError, Reference, iter_references
from agentkeel.schemas.tools import ToolSpec
from agentkeel.schemas.tools.catalog import withdrawn_reason

__all__ = [
    "PlanValidationError",
    "Reference",
    "critical_path_ms",
    "dependencies",
    "iter_references",
    "topological_order",
    "validate_plan",
]


def dependencies(step: PlanStep) -> list[str]:
    """Steps this one waits for: explicit `after` plus every referenced step, in order."""
    deps = list(step.after)
    refs = list(iter_references(step.args))
    if step.for_each is not None:
        refs.extend(iter_references(step.for_each))
    if step.when is not None:
        refs.extend(iter_references(step.when.ref))
    # A `repeat.until` tests the step's own output: not a dependency.
    for ref in refs:
        if ref.step is not None and ref.step not in deps:
            deps.append(ref.step)
    return deps


def validate_plan(plan: Plan, tools: Mapping[str, ToolSpec]) -> dict[str, list[str]]:
    """Check the whole plan before anything runs; returns each step's dependencies.

    Raises:
        PlanValidationError: the first problem found, in plan order.
    """
    if not plan.steps:
        raise PlanValidationError(EMPTY_PLAN, "the plan has no steps")
    by_id: dict[str, PlanStep] = {}
    for step in plan.steps:
        if step.id in by_id:
            raise PlanValidationError(DUPLICATE_STEP, f"step id {step.id!r} is used twice")
        by_id[step.id] = step
    for step in plan.steps:
        check_tool(step, tools)
    deps = {step.id: dependencies(step) for step in plan.steps}
    for step in plan.steps:
        for dep in deps[step.id]:
            if dep not in by_id:
                raise PlanValidationError(
                    MISSING_REFERENCE, f"step {step.id}: depends on missing step {dep!r}"
                )
            if dep == step.id:
                raise PlanValidationError(DEPENDENCY_CYCLE, f"step {step.id}: depends on itself")
    _check_acyclic(plan, deps)
    for step in plan.steps:
        check_arguments(step, by_id, tools)
    if plan.answer is not None:
        problem = template_problem(plan.answer, frozenset(by_id))
        if problem is not None:
            raise PlanValidationError(MISSING_REFERENCE, problem)
    return deps


def check_tool(step: PlanStep, tools: Mapping[str, ToolSpec]) -> None:
    """`UnknownTool` for a step whose tool is not in `tools`, saying why where it was
    withdrawn (an MCP server left out), else which tools are known."""
    if step.tool in tools:
        return
    withdrawn = withdrawn_reason(step.tool)
    if withdrawn is not None:
        raise PlanValidationError(
            UNKNOWN_TOOL, f"step {step.id}: tool {step.tool!r} is not served: {withdrawn}"
        )
    known = ", ".join(sorted(tools))
    raise PlanValidationError(
        UNKNOWN_TOOL, f"step {step.id}: unknown tool {step.tool!r} (known: {known})"
    )


def topological_order(plan: Plan, deps: Mapping[str, list[str]]) -> list[str]:
    """Kahn's algorithm; ties keep plan order so the result is deterministic."""
    remaining = {s.id: len(deps[s.id]) for s in plan.steps}
    dependants = _dependants(plan, deps)
    order: list[str] = []
    ready = [s.id for s in plan.steps if remaining[s.id] == 0]
    while ready:
        current = ready.pop(0)
        order.append(current)
        for child in dependants[current]:
            remaining[child] -= 1
            if remaining[child] == 0:
                ready.append(child)
    return order


def critical_path_ms(
    plan: Plan, deps: Mapping[str, list[str]], tools: Mapping[str, ToolSpec]
) -> dict[str, int]:
    """Longest expected time from the start of each step to the end of the run.

    When a cap holds steps back, the scheduler starts the step with the longest
    remaining path first: it is the one that bounds the run's latency.
    """
    dependants = _dependants(plan, deps)
    tool_of = {s.id: s.tool for s in plan.steps}
    remaining: dict[str, int] = {}
    for step_id in reversed(topological_order(plan, deps)):
        own = tools[tool_of[step_id]].expected_ms
        tail = max((remaining[c] for c in dependants[step_id]), default=0)
        remaining[step_id] = own + tail
    return remaining


def _dependants(plan: Plan, deps: Mapping[str, list[str]]) -> dict[str, list[str]]:
    dependants: dict[str, list[str]] = {s.id: [] for s in plan.steps}
    for step in plan.steps:
        for dep in deps[step.id]:
            dependants[dep].append(step.id)
    return dependants


def _check_acyclic(plan: Plan, deps: Mapping[str, list[str]]) -> None:
    order = topological_order(plan, deps)
    if len(order) < len(plan.steps):
        stuck = [s.id for s in plan.steps if s.id not in order]
        raise PlanValidationError(
            DEPENDENCY_CYCLE, f"steps {', '.join(stuck)} depend on each other in a cycle"
        )
