"""Plan validation and the static structure of a plan's DAG.

Pure functions over `schemas/`: deterministic, so they run inside the workflow,
and cheap enough to run before any tool is dispatched. Every problem is a
`PlanValidationError` whose `kind` names it; the workflow reports it to `join`
as a non-retryable error.
"""

from __future__ import annotations

import types
import typing
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any

from pydantic import BaseModel, TypeAdapter, ValidationError

from schemas.plan import ITEM_REF, REF_PREFIX, Plan, PlanStep
from schemas.tools import ToolSpec

# Error kinds: stable names, visible to policies and in results.
UNKNOWN_TOOL = "UnknownTool"
INVALID_ARGUMENTS = "InvalidArguments"
MISSING_REFERENCE = "MissingReference"
DEPENDENCY_CYCLE = "DependencyCycle"
DUPLICATE_STEP = "DuplicateStep"
EMPTY_PLAN = "EmptyPlan"
PLAN_ERROR_KINDS = (
    UNKNOWN_TOOL,
    INVALID_ARGUMENTS,
    MISSING_REFERENCE,
    DEPENDENCY_CYCLE,
    DUPLICATE_STEP,
    EMPTY_PLAN,
)


class PlanValidationError(Exception):
    """A plan that cannot run. `kind` is one of `PLAN_ERROR_KINDS`."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message


@dataclass(frozen=True)
class Reference:
    """A parsed `"$s1.a.b"` (step `s1`, path `("a", "b")`) or `"$item.sku"` (step `None`)."""

    step: str | None
    path: tuple[str, ...]

    @classmethod
    def parse(cls, value: object) -> Reference | None:
        if not isinstance(value, str) or not value.startswith(REF_PREFIX):
            return None
        head, *path = value[len(REF_PREFIX) :].split(".")
        step = None if REF_PREFIX + head == ITEM_REF else head
        return cls(step=step, path=tuple(path))

    def __str__(self) -> str:
        head = ITEM_REF if self.step is None else REF_PREFIX + self.step
        return ".".join((head, *self.path))


def iter_references(value: Any) -> Iterator[Reference]:
    """Every reference inside an argument value, at any depth of lists and dicts."""
    ref = Reference.parse(value)
    if ref is not None:
        yield ref
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from iter_references(item)
    elif isinstance(value, list):
        for item in value:
            yield from iter_references(item)


def dependencies(step: PlanStep) -> list[str]:
    """Steps this one waits for: explicit `after` plus every referenced step, in order."""
    deps = list(step.after)
    refs = list(iter_references(step.args))
    if step.for_each is not None:
        refs.extend(iter_references(step.for_each))
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
        if step.tool not in tools:
            known = ", ".join(sorted(tools))
            raise PlanValidationError(
                UNKNOWN_TOOL, f"step {step.id}: unknown tool {step.tool!r} (known: {known})"
            )
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
        _check_arguments(step, by_id, tools)
    return deps


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
    remaining: dict[str, int] = {}
    for step_id in reversed(topological_order(plan, deps)):
        own = tools[next(s.tool for s in plan.steps if s.id == step_id)].expected_ms
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


def _check_arguments(
    step: PlanStep, by_id: Mapping[str, PlanStep], tools: Mapping[str, ToolSpec]
) -> None:
    model = tools[step.tool].args_model
    fields = model.model_fields
    for name in step.args:
        if name not in fields:
            raise PlanValidationError(
                INVALID_ARGUMENTS,
                f"step {step.id}: {step.tool} has no argument {name!r} "
                f"(expects {', '.join(fields)})",
            )
    for name, info in fields.items():
        if info.is_required() and name not in step.args:
            raise PlanValidationError(
                INVALID_ARGUMENTS, f"step {step.id}: {step.tool} needs argument {name!r}"
            )
    item_type: Any = None
    if step.for_each is not None:
        source = Reference.parse(step.for_each)
        if source is None or source.step is None:
            raise PlanValidationError(
                INVALID_ARGUMENTS,
                f"step {step.id}: for_each must reference an earlier step's list, "
                f"got {step.for_each!r}",
            )
        list_type = _type_at(source, by_id, tools, step.id)
        if typing.get_origin(list_type) is not list:
            raise PlanValidationError(
                INVALID_ARGUMENTS, f"step {step.id}: for_each {source} is not a list"
            )
        item_type = typing.get_args(list_type)[0]
    for name, value in step.args.items():
        ref = Reference.parse(value)
        if ref is None:
            if any(True for _ in iter_references(value)):
                continue  # nested references are checked when resolved at runtime
            _check_literal(step, model, name, value)
            continue
        if ref.step is None:
            if item_type is None:
                raise PlanValidationError(
                    MISSING_REFERENCE,
                    f"step {step.id}: {ref} is only valid inside a for_each step",
                )
            source_type = _walk(item_type, ref.path, str(ref), step.id)
        else:
            source_type = _type_at(ref, by_id, tools, step.id)
        _check_compatible(step, name, fields[name].annotation, source_type, ref)


def _check_literal(step: PlanStep, model: type[BaseModel], name: str, value: Any) -> None:
    try:
        _field_adapter(model, name).validate_python(value)
    except ValidationError as exc:
        problem = exc.errors()[0]["msg"]
        raise PlanValidationError(
            INVALID_ARGUMENTS, f"step {step.id}: argument {name}={value!r}: {problem}"
        ) from None


@cache
def _field_adapter(model: type[BaseModel], name: str) -> TypeAdapter[Any]:
    info = model.model_fields[name]
    annotated: Any = (
        typing.Annotated[(info.annotation, *info.metadata)] if info.metadata else (info.annotation)
    )
    return TypeAdapter(annotated)


def _type_at(
    ref: Reference, by_id: Mapping[str, PlanStep], tools: Mapping[str, ToolSpec], at: str
) -> Any:
    assert ref.step is not None
    source = by_id.get(ref.step)
    if source is None:
        raise PlanValidationError(MISSING_REFERENCE, f"step {at}: {ref} names a missing step")
    root: Any = tools[source.tool].result_model
    if source.for_each is not None:
        root = list[root]
    return _walk(root, ref.path, str(ref), at)


def _walk(annotation: Any, path: tuple[str, ...], ref: str, at: str) -> Any:
    current = annotation
    for segment in path:
        current = _unwrap_optional(current)
        if typing.get_origin(current) is list:
            if not segment.isdigit():
                raise PlanValidationError(
                    MISSING_REFERENCE, f"step {at}: {ref}: {segment!r} indexes a list"
                )
            current = typing.get_args(current)[0]
        elif isinstance(current, type) and issubclass(current, BaseModel):
            if segment not in current.model_fields:
                raise PlanValidationError(
                    MISSING_REFERENCE,
                    f"step {at}: {ref}: {current.__name__} has no field {segment!r} "
                    f"(has {', '.join(current.model_fields)})",
                )
            current = current.model_fields[segment].annotation
        else:
            raise PlanValidationError(
                MISSING_REFERENCE, f"step {at}: {ref}: cannot take {segment!r} of a scalar"
            )
    return current


def _unwrap_optional(annotation: Any) -> Any:
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        if len(args) == 1:
            return args[0]
    return annotation


_SCALARS = (int, float, str, bool)


def _check_compatible(step: PlanStep, name: str, target: Any, source: Any, ref: Reference) -> None:
    """Reject references whose type can never fit, e.g. a str where an int is needed."""
    target, source = _unwrap_optional(target), _unwrap_optional(source)
    if target in _SCALARS and source in _SCALARS and target is not source:
        if target is float and source is int:
            return
        raise PlanValidationError(
            INVALID_ARGUMENTS,
            f"step {step.id}: argument {name} expects {target.__name__} "
            f"but {ref} is {source.__name__}",
        )
