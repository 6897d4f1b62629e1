"""Resolving `$step.field` and `$item.field` references against the outputs so far."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from agentkeel.schemas.plan.model import Condition
from agentkeel.schemas.plan.validation import Reference


class ResolutionError(Exception):
    """A reference could not be resolved against the actual outputs."""


def resolve(value: Any, outputs: Mapping[str, Any], item: Any = None) -> Any:
    """Replace every reference in `value` with the value it points at."""
    ref = Reference.parse(value)
    if ref is not None:
        root = item if ref.step is None else outputs[ref.step]
        return _lookup(root, ref)
    if isinstance(value, Mapping):
        return {k: resolve(v, outputs, item) for k, v in value.items()}
    if isinstance(value, list):
        return [resolve(v, outputs, item) for v in value]
    return value


def _lookup(root: Any, ref: Reference) -> Any:
    current = root
    for segment in ref.path:
        if isinstance(current, list) and segment.isdigit() and int(segment) < len(current):
            current = current[int(segment)]
        elif isinstance(current, Mapping) and segment in current:
            current = current[segment]
        else:
            raise ResolutionError(f"{ref} does not exist in the actual output")
    return current


def condition_value(condition: Condition, outputs: Mapping[str, Any]) -> Any:
    """The output a step's `when` tests; None when it does not exist (it is absent)."""
    try:
        return resolve(condition.ref, outputs)
    except (ResolutionError, KeyError):
        return None
