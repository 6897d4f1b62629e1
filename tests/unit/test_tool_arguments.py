"""The bounds every tool argument is checked against before any call: sizes, ranges, nesting."""

from __future__ import annotations

from typing import Any

import pytest

from agentkeel.schemas.tools.arguments import (
    MAX_ARGUMENT_DEPTH,
    MAX_ARGUMENT_ITEMS,
    MAX_ARGUMENT_TEXT_CHARS,
    argument_problem,
)


@pytest.mark.parametrize(
    ("value", "says"),
    [
        ({"a": "tab\tand\nnewline"}, None),
        ({"a": "bell\x07"}, "U+0007"),
        ({"a": 2**63 - 1, "b": -(2**63)}, None),
        ({"a": 2**63}, "64-bit"),
        ({"a": float("nan")}, "finite"),
        ({"a": ["x"] * (MAX_ARGUMENT_ITEMS + 1)}, "items"),
        ({"a": "x" * (MAX_ARGUMENT_TEXT_CHARS + 1)}, "characters"),
        ({"k\x00": 1}, "key"),
    ],
)
def test_argument_bounds(value: Any, says: str | None) -> None:
    problem = argument_problem(value)
    if says is None:
        assert problem is None
    else:
        assert problem is not None and says in problem


def test_nesting_is_bounded() -> None:
    deep: Any = 1
    for _ in range(MAX_ARGUMENT_DEPTH + 1):
        deep = [deep]
    problem = argument_problem({"a": deep})
    assert problem is not None and "nested" in problem
