"""The vocabulary of plan checking: references like `"$s1.field"` and named plan errors."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from agentkeel.schemas.plan.model import ITEM_REF, REF_PREFIX, REFERENCE


class PlanValidationError(Exception):
    """A plan that cannot run. `kind` is one of `schemas.errors.PLAN_ERROR_KINDS`."""

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
        if not isinstance(value, str):
            return None
        match = REFERENCE.match(value)
        if match is None:
            return None
        head, rest = match.group(1), match.group(2)
        step = None if REF_PREFIX + head == ITEM_REF else head
        return cls(step=step, path=tuple(rest[1:].split(".")) if rest else ())

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
