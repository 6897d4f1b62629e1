"""The public result contract of `AgentWorkflow` (JSON on the wire)."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, Field

from agentkeel.schemas.approvals import ApprovalRecord
from agentkeel.schemas.deadline import DeadlineReport
from agentkeel.schemas.origin import ArgumentOrigin
from agentkeel.schemas.plan.model import Plan
from agentkeel.schemas.route import Route
from agentkeel.schemas.speculation import SpeculationReport
from agentkeel.schemas.usage import RunUsage


class StepStatus(StrEnum):
    PENDING = "pending"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    SKIPPED = "skipped"
    TIMED_OUT = "timed_out"
    """A repeated step whose `until` never held before its timeout: what the plan foresaw
    could happen (its last output is kept), not a failure."""


class StepError(BaseModel):
    type: str
    message: str
    non_retryable: bool = False


class OutputRef(BaseModel):
    """Where a large output is kept (Postgres), in place of the output itself.

    Outputs above a size threshold travel by reference, so a fan-out over hundreds of
    rows does not copy them into the run's history again and again. `AgentClient` and
    the respond step resolve it; any client may read it from the `agent_outputs` table.
    """

    ref: str
    bytes: int
    items: int | None = None
    """Its length, when the output is a list (a `for_each` step's)."""


class StepOutcome(BaseModel):
    """What happened to one plan step; `args` are the resolved values the tool received."""

    id: str
    tool: str
    args: dict[str, Any] | list[dict[str, Any]] = Field(default_factory=dict)
    status: StepStatus = StepStatus.PENDING
    started_at: datetime | None = None
    finished_at: datetime | None = None
    output: Any = None
    error: StepError | None = None
    skipped_because: str | None = None
    """Why a step was skipped that did not fail: its `when` was false, or a step it needs
    was skipped so. (A step skipped for a failure says so in `error`.)"""
    attempt: int = 0
    """Planning round (0 = first plan) in which this outcome was produced."""
    queued_ms: float = 0.0
    """Time its calls waited for a slot of their downstream (part of its duration, apart
    from the calls' own work)."""
    runs: int = 0
    """For a repeated step: how many times it has run so far."""
    next_run_at: datetime | None = None
    """For a repeated step still watching: when it runs next."""
    output_ref: OutputRef | None = None
    """Set instead of `output` when the output was too large to carry (see `OutputRef`)."""
    reported: str | None = None
    """What the tool last said of its own progress while it ran (an MCP server's progress
    notification: `3/10: indexing`); None when it said nothing."""
    speculative: bool = False
    """Served by a call started speculatively while the plan was being written."""
    provenance: dict[str, ArgumentOrigin] | None = None
    """For a side effect: where the arguments naming its target and amount came from."""

    @property
    def as_planned(self) -> bool:
        """It succeeded, or the plan's own condition passed it over, or its watch ran out of
        time as the plan allowed: nothing went wrong."""
        return self.status in (StepStatus.SUCCEEDED, StepStatus.TIMED_OUT) or (
            self.status is StepStatus.SKIPPED and self.error is None
        )

    @property
    def passed_over(self) -> bool:
        """It did not produce what its dependants need, by the plan's own decision."""
        return self.status is StepStatus.TIMED_OUT or (
            self.status is StepStatus.SKIPPED and self.error is None
        )


class CacheStatus(StrEnum):
    MISS = "miss"
    EXACT = "exact"
    """The cached answer of the same (normalized) question."""
    SEMANTIC = "semantic"
    """The cached answer of a paraphrase with the same entities."""
    CANONICAL = "canonical"
    """The cached answer of a question read the same: same facts, same concepts."""
    PLAN = "plan"
    """The cached plan, run fresh: the cached answer was older than its tools' TTLs."""
    BYPASS = "bypass"


ANSWER_HITS = frozenset({CacheStatus.EXACT, CacheStatus.SEMANTIC, CacheStatus.CANONICAL})
"""Statuses of a run answered whole from the cache (its steps ran in the cached run)."""


class CacheMatch(BaseModel):
    question: str
    similarity: float | None = None


class Timings(BaseModel):
    """Milliseconds per layer of the latency model."""

    cache: float = 0.0
    route: float = 0.0
    plan: float = 0.0
    tools: float = 0.0
    respond: float = 0.0
    total: float = 0.0
    ttft: float | None = None
    """Run start to the first piece of the answer on the token stream. For a cache hit,
    the answer comes whole: equal to `total`."""
    speculation_saved: float = 0.0
    """Tool time already done by speculative calls when their steps asked for them."""


class AgentResult(BaseModel):
    answer: str
    route: Route
    cache: CacheStatus
    plan: Plan
    steps: list[StepOutcome] = Field(default_factory=list)
    timings_ms: Timings = Field(default_factory=Timings)
    replans: int = 0
    plan_error: StepError | None = None
    """Set when the last plan could not be validated (the run still answers)."""
    cache_match: CacheMatch | None = None
    """Which stored question a semantic or plan hit came from."""
    warnings: list[str] = Field(default_factory=list)
    """Degradations that did not stop the run (e.g. the cache was unreachable)."""
    approvals: list[ApprovalRecord] = Field(default_factory=list)
    """Every side effect that waited for approval: who decided, what, and why."""
    speculation: SpeculationReport | None = None
    """The reads started while the heavy model planned, used or not (None: none)."""
    deadline: DeadlineReport | None = None
    """With `options.deadline_ms`: the budget, whether it was met, every trade made."""
    usage: RunUsage | None = None
    """Tokens and cost of the run's model calls, by tier and model (`docs/usage.md`); zero
    and `cached` for an answer from the cache. None only in results of runs recorded
    before usage was counted."""
    workflow_id: str = ""
    run_id: str = ""
