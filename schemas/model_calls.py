"""Inputs and results of the model activities: route, plan, join, respond (inference pool).

They cross the Temporal boundary between the workflow and the inference workers, so
their field names are a contract visible in every run's history: new fields only with
defaults.
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, Field

from agentkeel.schemas.plan.model import Plan
from agentkeel.schemas.result import StepError, StepOutcome
from agentkeel.schemas.route import Route, Tier
from agentkeel.schemas.speculation import MAX_SPECULATIVE_CALLS, PredictedCall, Reading
from agentkeel.schemas.usage import RunUsage


class ConversationTurn(BaseModel):
    """An earlier run of the same conversation, as the model's context needs it."""

    question: str
    answer: str
    facts: dict[str, Any] = Field(default_factory=dict)
    """Entities, IDs and key tool results of that run (`ticket_id`, `status`, ...): what a
    summary of older turns keeps when their text no longer fits the token budget."""


class ModelCallInput(BaseModel):
    """What every model call that reads the conversation gets: the question and whose it is."""

    question: str
    tenant: str = "default"
    conversation_id: str | None = None
    audience: str = "all"
    """Whose conversation turns the model may read: only runs of the same audience."""
    usage_key: str | None = None
    """Whose use the call counts as besides the tenant's (`AgentRequest.usage_key`)."""
    history: list[ConversationTurn] = Field(default_factory=list)
    """Filled on the inference worker from the run records (never sent by the workflow:
    conversations stay out of workflow history)."""


class RouteInput(ModelCallInput):
    """The router reads the question (and the conversation) alone."""

    plan_ahead: bool = True
    """The run may take a plan made beside the router (`RouteResult.planned`): false for
    a run with a deadline, whose tier is chosen before it plans."""
    stream_steps: bool = False
    """Signal the run each read its planners write as soon as it is written (a plan made
    beside the router, a draft plan), so it starts before the plan is whole
    (`workflows.plan_stream`); false where the run would not take them."""
    started_reads: list[PredictedCall] = Field(
        default_factory=list, max_length=MAX_SPECULATIVE_CALLS
    )
    """Reads the run started from the request: its planners are given them as steps
    `p1`, `p2`, ... of the plan (`inference.llm.given_reads`)."""


class RouteResult(BaseModel):
    route: Route
    confident: bool
    """Confidence reached the router threshold: `draft_plan` is used and `plan` is skipped."""
    draft_plan: Plan | None = None
    warnings: list[str] = Field(default_factory=list)
    """What the run's result should say about how this step was served (a fallback)."""
    fallback: bool = False
    """Served by the rules because the model server was unavailable: the run is not cached."""
    usage: RunUsage | None = None
    """What the activity's model calls used (None: no model was called, the rules served)."""
    reading: Reading = Field(default_factory=dict)
    """The entities the router read in the request, by the argument they fill."""
    speculate: list[PredictedCall] = Field(default_factory=list)
    """Reads the reading predicts, to start while the heavy model plans (empty when
    confident, or where the worker's `AGENTKEEL_SPECULATION` is off)."""
    planned: PlanResult | None = None
    """An unsure route's plan, made beside the router (`AGENTKEEL_PLAN_AHEAD`): the run
    goes straight to its tools, with no plan stage."""


class PlanInput(ModelCallInput):
    route: Route
    attempt: int = 0
    previous_steps: list[StepOutcome] = Field(default_factory=list)
    plan_error: StepError | None = None
    """Why the previous plan was rejected, so the planner can correct it."""
    stream_steps: bool = False
    """Signal the run each read the planner writes as soon as it is written
    (`workflows.plan_stream`); false where the run would not take them."""
    patch: bool = False
    """A replan that patches the previous round (`options.replan_patch`): the planner
    writes only the steps to replace (same id) or add, each with its id; the round's
    other steps are kept."""
    started_reads: list[PredictedCall] = Field(
        default_factory=list, max_length=MAX_SPECULATIVE_CALLS
    )
    """Reads the run started from the request, given to a first plan as its steps `p1`,
    `p2`, ...: the planner writes only what comes after them (`RouteInput.started_reads`)."""


class PlanResult(BaseModel):
    plan: Plan
    tier: Tier = Tier.RULES
    route: Route | None = None
    """The planner's own reading of the request, when it re-routed (the heavy tier)."""
    error: StepError | None = None
    """Set when the model gave no usable plan after every decode: this round's plan is
    rejected with this error (the plan is then empty)."""
    warnings: list[str] = Field(default_factory=list)
    """What the run's result should say about how this step was served (a fallback)."""
    fallback: bool = False
    """Served by the rules because the model server was unavailable: the run is not cached."""
    usage: RunUsage | None = None
    """What the activity's model calls used (None: no model was called, the rules served)."""
    patch: bool = False
    """The plan is a patch of the round before (`PlanInput.patch`, and the planner wrote
    one): the run merges it with that round's plan (`workflows.dag.plan_patch`)."""


RouteResult.model_rebuild()


class JoinDecision(StrEnum):
    FINISH = "finish"
    REPLAN = "replan"


class JoinInput(BaseModel):
    question: str
    plan: Plan
    steps: list[StepOutcome]
    plan_error: StepError | None = None
    replans: int = 0
    max_replans: int = 2
    route: Route | None = None
    """The run's route: its tier decides which model judges."""
    tenant: str = "default"
    usage_key: str | None = None
    """Whose use the call counts as (`ModelCallInput`)."""


class JoinResult(BaseModel):
    decision: JoinDecision
    reason: str = ""
    warnings: list[str] = Field(default_factory=list)
    """What the run's result should say about how this step was served (a fallback)."""
    fallback: bool = False
    """Served by the rules because the model server was unavailable: the run is not cached."""
    usage: RunUsage | None = None
    """What the activity's model calls used (None: no model was called, the rules served)."""


class RespondInput(ModelCallInput):
    route: Route
    steps: list[StepOutcome]
    plan_error: StepError | None = None
    run_id: str = ""
    """The run whose token stream the answer is published to (the one the client started,
    also after continue-as-new); empty: the activity's own run."""
    left_out: list[str] = Field(default_factory=list)
    """What the run left out to meet its deadline, in words: the answer ends saying so."""


class RespondResult(BaseModel):
    answer: str
    first_token_at: datetime | None = None
    """When the first piece of the answer existed (and was published to the run's token
    stream): the run's time to first token is measured to here."""
    warnings: list[str] = Field(default_factory=list)
    """What the run's result should say about how this step was served (a fallback)."""
    fallback: bool = False
    """Served by the rules because the model server was unavailable: the run is not cached."""
    usage: RunUsage | None = None
    """What the activity's model calls used (None: no model was called, the rules served)."""


Answered = TypeVar("Answered", RouteResult, PlanResult, JoinResult, RespondResult)


class LocalPolicyResult(BaseModel, Generic[Answered]):
    """A policy step offered to the CPU worker first (a local activity, no queue hop).

    `result` is None where that worker has no model-free policy (a deployment with models):
    the step then goes to the inference pool. Recorded in history, so a replay takes the
    same way whatever the worker's configuration is by then.
    """

    result: Answered | None = None
    tools_here: bool = False
    """That worker also hosts the tool activities (`AGENTKEEL_LOCAL_TOOLS=on`): this run's
    fast reads may be local activities (`ToolSpec.local_read`). Recorded, as `result` is."""
