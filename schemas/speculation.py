"""Speculative tool calls: reads the router's reading predicts, started while the heavy
model plans (see `workflows.speculation`).

Only a tool the catalog marks as safe to run ahead is ever speculated: idempotent (a read),
with a cache TTL (its result may be reused for a while anyway), run as an activity, and
named by one argument the router's reading fills (`ToolSpec.speculate_arg`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, Field

from agentkeel.schemas.tools.spec import ToolSpec

MAX_SPECULATIVE_CALLS = 8
"""The most calls one run ever speculates, whatever a worker's setting says."""
GIVEN_PREFIX = "p"
"""Reads started from the request are given to the planner as steps `p1`, `p2`, ...
(`inference.llm.given_reads`): never the id of a step a model writes (`s1`, ...)."""


def given_id(position: int) -> str:
    """The step id of the read started from the request at `position` (0-based)."""
    return f"{GIVEN_PREFIX}{position + 1}"


def call_key(tool: str, args: Mapping[str, Any]) -> str:
    """One call's identity: its tool and its checked arguments (`ToolSpec.checked_args`),
    so the same call started early, streamed and written in a plan compares equal."""
    return f"{tool}:{json.dumps(args, sort_keys=True)}"


Reading = dict[str, list[str | int]]
"""The router's reading of the entities in a request, by the argument they fill
(`{"ticket_id": [1001], "email": ["ada@example.com"], "account": ["ACC-1"]}`)."""


class PredictedCall(BaseModel):
    """One read the router's reading predicts the plan will make, or a planner has
    written before its plan is whole."""

    tool: str
    args: dict[str, Any] = Field(default_factory=dict)
    step: str | None = Field(default=None, max_length=8)
    """The plan step that makes it (`s3`), for a call a planner streamed."""
    after: list[str] = Field(default_factory=list, max_length=MAX_SPECULATIVE_CALLS)
    """Streamed steps it waits for: those its `$` references read (and its `after`). Its
    arguments are resolved against their results once they return."""


class PlanSteps(BaseModel):
    """The `plan_step` signal: reads a planner has written, in the order it wrote them,
    before its plan is whole (`workflows.plan_stream`)."""

    calls: list[PredictedCall] = Field(min_length=1, max_length=MAX_SPECULATIVE_CALLS)


class SpeculationOutcome(StrEnum):
    USED = "used"
    """A plan step took its result (or awaited it)."""
    UNUSED = "speculative_unused"
    """No step of the plan made this call: cancelled if still running, its result dropped."""
    FAILED = "speculative_failed"
    """A step made this call but the speculative one had failed: the step ran it itself."""


class SpeculativeCall(BaseModel):
    tool: str
    args: dict[str, Any] = Field(default_factory=dict)
    outcome: SpeculationOutcome
    step_id: str | None = None
    """The step it served (`used`)."""
    cancelled: bool = False
    """Still running when the plan arrived without it, so cancelled."""
    saved_ms: float = 0.0
    """How much of its work was done before its step asked for it."""


class SpeculationReport(BaseModel):
    """What a run's speculation did: in the result as `speculation`."""

    calls: list[SpeculativeCall] = Field(default_factory=list)

    @property
    def hits(self) -> int:
        return sum(1 for c in self.calls if c.outcome is SpeculationOutcome.USED)

    @property
    def unused(self) -> int:
        """Calls whose work was wasted: not used, or failed and run again by their step."""
        return len(self.calls) - self.hits


def may_run_ahead(spec: ToolSpec) -> bool:
    """A tool safe to run before the plan that makes the call is whole and checked: a
    cached, idempotent read run as an activity, never a side effect. The test for a step
    a planner has written but not finished (`workflows.plan_stream`)."""
    return spec.idempotent and spec.cache_ttl is not None and not spec.runs_in_workflow


def may_speculate(spec: ToolSpec) -> bool:
    """A tool safe to run before any plan asked for it: a cached read, never an effect,
    named by one argument a reading of the request can fill."""
    return may_run_ahead(spec) and spec.speculate_arg is not None


def predicted_calls(
    reading: Mapping[str, Sequence[Any]], tools: Mapping[str, ToolSpec], *, limit: int
) -> list[PredictedCall]:
    """The calls `reading` predicts, in catalog order, at most `limit` (and the hard cap)."""
    calls: list[PredictedCall] = []
    for spec in tools.values():
        if not may_speculate(spec):
            continue
        assert spec.speculate_arg is not None
        for value in reading.get(spec.speculate_arg, ()):
            call = PredictedCall(tool=spec.name, args={spec.speculate_arg: value})
            if call not in calls:
                calls.append(call)
    return calls[: max(0, min(limit, MAX_SPECULATIVE_CALLS))]
