"""A ready step turned into its tool calls: arguments resolved from earlier outputs.

Pure functions of the plan, the outputs so far and the catalog, so the scheduler (which
owns the order and the caps) only decides when; what each call receives is decided here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from agentkeel.schemas.plan.model import PlanStep
from agentkeel.schemas.tools import ToolSpec
from agentkeel.workflows.dag.calls import ToolCall
from agentkeel.workflows.dag.resolve import ResolutionError, resolve
from agentkeel.workflows.dag.step_gates import SchedulerLimits

__all__ = ["calls_of", "resolved_args", "runs_apart"]


def calls_of(
    step: PlanStep, outputs: Mapping[str, Any], tools: Mapping[str, ToolSpec]
) -> list[ToolCall]:
    """One call for a plain step; one per item for a `for_each` step (none for an empty list).

    Raises:
        ResolutionError: a reference or `for_each` does not resolve to what it must.
        ValueError: a resolved argument fails the tool's model (pydantic's error).
    """
    if step.for_each is None:
        args = resolved_args(step, None, outputs, tools)
        return [ToolCall(step.id, step.tool, args, watch=step.repeat is not None)]
    items = resolve(step.for_each, outputs)
    if not isinstance(items, list):
        raise ResolutionError(f"for_each {step.for_each} is not a list at runtime")
    return [
        ToolCall(step.id, step.tool, resolved_args(step, item, outputs, tools), index=i)
        for i, item in enumerate(items)
    ]


def resolved_args(
    step: PlanStep, item: Any, outputs: Mapping[str, Any], tools: Mapping[str, ToolSpec]
) -> dict[str, Any]:
    """`step.args` with its references (and `$item`) resolved, checked by the tool's model."""
    args = resolve(step.args, outputs, item)
    spec = tools[step.tool]
    for name, value in args.items():
        if value is None and spec.args_model.model_fields[name].is_required():
            raise ResolutionError(f"argument {name}: {step.args[name]} resolved to null")
    # Validate now so a bad resolved value fails this step without a wasted activity,
    # and hand on the validated values ("15000" is 15000 from here on).
    return spec.checked_args(args)


def runs_apart(
    step: PlanStep, calls: int, spec: ToolSpec, limits: SchedulerLimits, *, read_later: bool
) -> bool:
    """Whether a `for_each` step runs apart, in histories of its own: only a large one,
    of an idempotent tool, whose output no later step reads (`read_later`; it reaches the
    answer by reference)."""
    at = limits.partition_at
    return (
        at is not None
        and calls >= at
        and step.for_each is not None
        and spec.idempotent
        and not spec.runs_in_workflow
        and not read_later
        and limits.may_partition()
    )
