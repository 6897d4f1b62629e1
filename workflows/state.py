"""The agent graph's state. Lives in workflow memory only: nodes run inline in the workflow."""

from __future__ import annotations

from datetime import datetime
from typing import TypedDict

from agentkeel.schemas.model_calls import PlanResult
from agentkeel.schemas.plan.model import Plan
from agentkeel.schemas.progress import RunProgress
from agentkeel.schemas.request import AgentRequest
from agentkeel.schemas.result import (
    AgentResult,
    CacheMatch,
    CacheStatus,
    StepError,
    StepOutcome,
    Timings,
)
from agentkeel.schemas.route import Route
from agentkeel.schemas.speculation import PredictedCall, SpeculationReport
from agentkeel.workflows.dag.run_context import RunContext


class AgentState(TypedDict, total=False):
    request: AgentRequest
    started_at: datetime
    inference_queue: str
    cache: CacheStatus
    cache_match: CacheMatch | None
    route: Route
    confident: bool
    plan: Plan
    steps: list[StepOutcome]
    """Outcomes of every planning round (each tagged with its `attempt`)."""
    plan_error: StepError | None
    planner_error: StepError | None
    """Set when the planner gave no usable plan this round: `execute` then runs nothing."""
    replans: int
    decision: str
    replanned: PlanResult | None
    """The next round's plan, written beside the join (`nodes.join`): the plan node's."""
    previous_plan: Plan
    """The plan of the round a replan follows (a patch is applied to it)."""
    patching: bool
    """This round's plan is a patch of the round before (`workflows.dag.plan_patch`)."""
    answer: str
    timings: Timings
    warnings: list[str]
    planned_ahead: bool
    """The route came back with a plan made beside it: the plan stage was skipped."""
    answer_templated: bool
    """The answer is the plan's template, filled in the workflow: no token stream was
    written, so it reaches the caller whole, with the result."""
    degraded: bool
    """A policy step was served by the rules in a model's place (`inference.fallback`)."""
    result: AgentResult
    progress: RunProgress
    """Owned by the workflow (answers the `progress` query); nodes update it in place."""
    context: RunContext
    """Owned by the workflow: actor, request id, limits, approvals, allowed side effects."""
    resume: bool
    """This run continues another: its plan is running (watches pick up where they were)."""
    speculate: list[PredictedCall]
    """The reads an unsure route predicted, to start while the heavy model plans."""
    speculation: SpeculationReport
    """What the run's speculative reads did."""
    suspended: bool
    """Watches stopped for a continue-as-new: the run hands on instead of answering."""
    given: bool
    """The request brought its plan: not replanned, not cached for its question."""
