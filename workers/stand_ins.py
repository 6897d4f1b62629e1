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
    """`activities` with those of the same names replaced (tests and benchmarks swap tools).

    A stand-in for a tool heartbeats as the real tool does (the workflow gives tool calls a
    heartbeat timeout), so a slow stand-in is not taken for a dead worker.
    """
    replaced = {activity_name(a) for a in stand_ins}
    kept = [a for a in activities if activity_name(a) not in replaced]
    return kept + [_as_tool(a) for a in stand_ins]


def _as_tool(fn: Callable[..., Any]) -> Callable[..., Any]:
    from agentkeel.activities.heartbeat import TOOL_HEARTBEAT_EVERY_S, heartbeating_tool
    from agentkeel.schemas.tools import TOOLS

    name = activity_name(fn)
    if name not in TOOLS or not TOOLS[name].idempotent:  # as `cache_assembly.tool_activities`
        return fn
    return heartbeating_tool(fn, name, TOOL_HEARTBEAT_EVERY_S)
