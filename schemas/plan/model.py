"""Plans: the DAG of tool steps a policy hands to the scheduler."""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool, field_validator, model_validator

REF_PREFIX = "$"
ITEM_REF = "$item"
"""Inside a `for_each` step, `$item` (or `$item.field`) is the current list element."""
REFERENCE = re.compile(r"^\$([A-Za-z][A-Za-z0-9_]*)((?:\.[A-Za-z0-9_]+)*)$")
"""Only strings of exactly this shape are references; "$20 credit" is a literal."""
RESERVED_STEP_IDS = frozenset({"item"})


Scalar = str | int | float | bool


class Condition(BaseModel):
    """When a step runs: a test of one earlier output, `{"ref": "$s1.status", "in": [...]}`
    or `{"ref": "$s1.assignee", "is": "present"}`. False skips the step (and what
    depends on it) with a reason: a decision of the plan, not a failure."""

    model_config = ConfigDict(
        extra="forbid", serialize_by_alias=True, validate_by_name=True, validate_by_alias=True
    )

    ref: str = Field(pattern=REFERENCE.pattern)
    """A reference to an earlier step's output (`$s1.field`); its step becomes a dependency."""
    is_: Literal["present", "absent"] | None = Field(default=None, alias="is")
    """`present`: the value exists and is not null, empty or false; `absent`: the opposite."""
    in_: list[Scalar] | None = Field(default=None, alias="in", min_length=1, max_length=50)
    """The value equals one of these."""

    @model_validator(mode="after")
    def _one_test(self) -> Condition:
        if (self.is_ is None) == (self.in_ is None):
            raise ValueError('a condition has exactly one of "is" and "in"')
        return self

    def holds(self, value: Any) -> bool:
        """Whether the condition holds for `value`, the referenced output (None: missing)."""
        if self.is_ is not None:
            present = value is not None and value != "" and value != [] and value is not False
            return present if self.is_ == "present" else not present
        return self.in_ is not None and value in self.in_

    def unmet(self, value: Any) -> str:
        """Why the condition does not hold, in words."""
        if self.is_ == "present":
            return f"{self.ref} is absent"
        if self.is_ == "absent":
            return f"{self.ref} is present"
        return f"{self.ref} is {value!r}, not one of {self.in_}"


REPEAT_FLOOR_S = 1.0
"""No step re-runs more often than this: a watch is not a busy loop on a downstream."""
DEFAULT_REPEAT_EVERY_S = 60.0
MAX_WATCH_S = 31 * 24 * 3600.0
"""The longest a step may watch (and a `wait` may sleep): a month."""


class Repeat(BaseModel):
    """Re-run an idempotent step on a durable timer until its own output passes `until`:
    `{"until": {"ref": "$s1.status", "in": ["shipped"]}, "every_s": 600, "timeout_s": 86400}`.
    Past `timeout_s` the step ends `timed_out` with its last output: a named outcome."""

    model_config = ConfigDict(extra="forbid")

    until: Condition
    """A test of this step's own output (`$<this step's id>.field`)."""
    every_s: float = Field(default=DEFAULT_REPEAT_EVERY_S, ge=REPEAT_FLOOR_S, le=MAX_WATCH_S)
    """Seconds between runs (the request's `options.watch_every_s` overrides it)."""
    timeout_s: float = Field(default=24 * 3600.0, ge=REPEAT_FLOOR_S, le=MAX_WATCH_S)
    """Seconds from the first run after which the step stops watching."""


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
    when: Condition | None = None
    """Run only if this holds once the steps it references are done; else skipped."""
    repeat: Repeat | None = None
    """Re-run until its own output passes a test (a watch); idempotent tools only."""
    optional: StrictBool = False
    """The answer is complete enough without it: a run short of time may leave it out
    (and its dependants), saying so in the answer."""

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
    answer: str | None = Field(default=None, min_length=1, max_length=4000)
    """The answer, written with the plan: text with `{$step.field}` placeholders (and
    `{$s1.total_cents|money}`) that the workflow fills from the outputs when every step
    succeeded, with no respond call (`schemas.plan.answer_template`)."""
