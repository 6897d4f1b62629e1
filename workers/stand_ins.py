"""Activities by their registered names: which one a function is, and swapping in stand-ins.

Tests and benchmarks replace tools or model activities with stand-ins registered under the
real names; the cache assembly wraps tools by name.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any


def activity_name(fn: Callable[..., Any]) -> str:
    """The activity type a registered function serves."""
    name: str = getattr(fn, "__temporal_activity_definition").name
    return name


def with_stand_ins(
    activities: Sequence[Callable[..., Any]], stand_ins: Sequence[Callable[..., Any]]
) -> list[Callable[..., Any]]:
    """`activities` with those of the same names replaced (tests and benchmarks swap tools)."""
    replaced = {activity_name(a) for a in stand_ins}
    return [a for a in activities if activity_name(a) not in replaced] + list(stand_ins)
