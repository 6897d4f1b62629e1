"""`PlanPattern`: a question a domain knows how to plan without a model.

A domain declares patterns (a regular expression, the intent it means and the plan to
run) and serves them with `agentkeel.pattern_policy` (`inference.patterns`), the
model-free planner any domain can use.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = ["PlanPattern"]


@dataclass(frozen=True)
class PlanPattern:
    """When `pattern` matches a question (case-insensitively), plan `steps` for `intent`."""

    intent: str
    pattern: str
    steps: Sequence[dict[str, Any]] = field(default_factory=tuple)
    """Plan steps as JSON (`{"id": "s1", "tool": ..., "args": {...}}`), ids local to it."""
