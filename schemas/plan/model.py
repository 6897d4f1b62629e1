"""Plans: the DAG of tool steps a policy hands to the scheduler."""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

REF_PREFIX = "$"
ITEM_REF = "$item"
"""Inside a `for_each` step, `$item` (or `$item.field`) is the current list element."""
REFERENCE = re.compile(r"^\$([A-Za-z][A-Za-z0-9_]*)((?:\.[A-Za-z0-9_]+)*)$")
"""Only strings of exactly this shape are references; "$20 refund" is a literal."""
RESERVED_STEP_IDS = frozenset({"item"})


class PlanStep(BaseModel):
    """One tool call. Arguments may reference earlier outputs as `"$s1.field"`."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(min_length=1, max_length=32, pattern=r"^[A-Za-z][A-Za-z0-9_]*$")
    tool: str
    args: dict[str, Any] = Field(default_factory=dict)
    after: list[str] = Field(default_factory=list)
    """Explicit dependencies beyond those implied by references."""
    for_each: str | None = None
    """A reference to a list (`"$s1.items"`): the step runs once per element, in parallel."""

    @field_validator("id")
    @classmethod
    def _not_reserved(cls, value: str) -> str:
        if value in RESERVED_STEP_IDS:
            raise ValueError(f"step id {value!r} is reserved for the current for_each element")
        return value


class Plan(BaseModel):
    """An ordered list of steps; order is informational, dependencies decide execution."""

    model_config = ConfigDict(extra="forbid")

    steps: list[PlanStep] = Field(default_factory=list)
    rationale: str = ""
