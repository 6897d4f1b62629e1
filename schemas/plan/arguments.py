"""Static checks of one step's arguments against its tool's models, references included."""

from __future__ import annotations

import types
import typing
from collections.abc import Mapping
from functools import cache
from typing import Any

from pydantic import BaseModel, TypeAdapter, ValidationError

from agentkeel.schemas.errors import (
    INVALID_ARGUMENTS,
    INVALID_CONDITION,
    INVALID_REPEAT,
    MISSING_REFERENCE,
)
from agentkeel.schemas.plan.model import PlanStep
from agentkeel.schemas.plan.references import PlanValidationError, Reference, iter_references
from agentkeel.schemas.tools import ToolSpec


def check_arguments(
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
    if step.when is not None:
        condition = Reference.parse(step.when.ref)
        if condition is None or condition.step is None:
            raise PlanValidationError(
                INVALID_CONDITION,
                f"step {step.id}: when must test an earlier step's output, got {step.when.ref!r}",
            )
        _type_at(condition, by_id, tools, step.id)  # a missing step or field is named
    if step.repeat is not None:
        _check_repeat(step, by_id, tools)
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
    if not any(True for _ in iter_references(step.args)):
        _check_literals_together(step, model)


def reference_type(
    ref: Reference, by_id: Mapping[str, PlanStep], tools: Mapping[str, ToolSpec], at: str
) -> Any:
    """The type `ref` (`$s1.a.b`) has in `by_id`'s steps; a `PlanValidationError` naming a
    missing step or field otherwise. Used by the load-time check of a domain's patterns."""
    return _type_at(ref, by_id, tools, at)


def reference_fits(step: PlanStep, name: str, target: Any, source: Any, ref: Reference) -> None:
    """Raise `PlanValidationError` when a value of type `source` can never fit argument
    `name` (of type `target`)."""
    _check_compatible(step, name, target, source, ref)


def _check_repeat(
    step: PlanStep, by_id: Mapping[str, PlanStep], tools: Mapping[str, ToolSpec]
) -> None:
    """A watch re-runs a read on a timer: never a side effect, a built-in or a fan-out."""
    assert step.repeat is not None
    spec = tools[step.tool]
    if not spec.idempotent or spec.runs_in_workflow:
        raise PlanValidationError(
            INVALID_REPEAT, f"step {step.id}: {step.tool} may not repeat (not an idempotent read)"
        )
    if step.for_each is not None:
        raise PlanValidationError(INVALID_REPEAT, f"step {step.id}: a for_each step may not repeat")
    target = Reference.parse(step.repeat.until.ref)
    if target is None or target.step != step.id:
        raise PlanValidationError(
            INVALID_REPEAT,
            f"step {step.id}: repeat.until must test this step's own output "
            f"(${step.id}.field), got {step.repeat.until.ref!r}",
        )
    _type_at(target, by_id, tools, step.id)


def _check_literals_together(step: PlanStep, model: type[BaseModel]) -> None:
    """Rules that span arguments (`wait` takes seconds or until) hold before anything runs."""
    try:
        model.model_validate(step.args)
    except ValidationError as exc:
        problem = exc.errors()[0]["msg"]
        raise PlanValidationError(
            INVALID_ARGUMENTS, f"step {step.id}: {step.tool} arguments: {problem}"
        ) from None


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
