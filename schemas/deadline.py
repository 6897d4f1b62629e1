"""Deadline-aware runs: the request's `options.deadline_ms`, the latencies a run plans it
with, and what it traded to meet it (`AgentResult.deadline`)."""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, Field

MAX_DEADLINE_MS = 600_000
"""Ten minutes: past that a caller is not waiting, and a watch or a wait is the tool."""


class LatencyEstimate(BaseModel):
    """Milliseconds one activity took in recent runs (or a default, with `samples` 0)."""

    p50_ms: float
    p90_ms: float
    samples: int = 0


class LatencyEstimatesInput(BaseModel):
    tools: list[str] = Field(default_factory=list)
    """The tools to estimate (the catalog's, for a plan not yet known)."""


class LatencyEstimates(BaseModel):
    """What the workers measured (`activities.latency`), read once by a run with a deadline.

    `models` is keyed `<step>:<tier>` (`plan:heavy`, `respond:light`). `source` says whether
    the figures came from measurements (`measured`) or, Redis being out of reach, from the
    catalog's and the project's defaults (`defaults`)."""

    tools: dict[str, LatencyEstimate] = Field(default_factory=dict)
    models: dict[str, LatencyEstimate] = Field(default_factory=dict)
    source: str = "defaults"


class DecisionKind(StrEnum):
    TIER = "tier"
    """The light tier plans (and answers) instead of the heavy one."""
    CONCURRENCY = "concurrency"
    """The run's concurrency cap was raised."""
    STALE = "stale"
    """A tool's result may be served stale, inside its stale-while-revalidate window."""
    DROP = "drop"
    """An optional step was left out."""
    INFEASIBLE = "infeasible"
    """Even with every trade the estimate was over the budget: the run said so at once."""


class DeadlineDecision(BaseModel):
    kind: DecisionKind
    detail: str
    """In words: `light tier plans (heavy 600 ms, light 40 ms)`, `dropped s3 (search_kb)`."""
    saved_ms: float = 0.0
    """What the trade took off the estimate."""
    steps: list[str] = Field(default_factory=list)
    """The steps it concerns (dropped, served stale)."""


class DeadlineReport(BaseModel):
    """`AgentResult.deadline`: the budget, whether the run met it, and every trade made."""

    budget_ms: float
    met: bool = False
    estimated_ms: float | None = None
    """The plan's estimate after the trades, when the run made one."""
    decisions: list[DeadlineDecision] = Field(default_factory=list)
    source: str = "defaults"
    """Where the estimates came from (see `LatencyEstimates.source`)."""
