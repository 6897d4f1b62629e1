"""Inputs and results of the agent's graph activities (one model each, new fields with defaults).

These cross the Temporal boundary between the workflow and the CPU or inference
workers, so their field names are a contract visible in every run's history.
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, Field

from schemas.plan.model import Plan
from schemas.result import AgentResult, CacheStatus, StepError, StepOutcome
from schemas.route import Route, Tier


class LookupCacheInput(BaseModel):
    question: str
    tenant: str
    conversation_id: str | None = None
    semantic: bool = True
    """Also look for a guarded semantic match when the exact key misses."""


class LookupCacheResult(BaseModel):
    status: CacheStatus = CacheStatus.MISS
    hit: AgentResult | None = None
    """The cached run, when its answer may be served (`exact` or `semantic`)."""
    plan: Plan | None = None
    route: Route | None = None
    """The cached plan and route, when only the plan may be reused (`plan`)."""
    similarity: float | None = None
    matched_question: str | None = None
    """For a semantic match: the stored question it matched, and how closely."""
    available: bool = True
    """False when the cache could not be reached; the lookup then counts as a miss."""


class ConversationTurn(BaseModel):
    """An earlier run of the same conversation, as the model's context needs it."""

    question: str
    answer: str
    facts: dict[str, Any] = Field(default_factory=dict)
    """Entities, IDs and key tool results of that run (`order_id`, `status`, ...): what a
    summary of older turns keeps when their text no longer fits the token budget."""


class RouteInput(BaseModel):
    question: str
    tenant: str = "default"
    conversation_id: str | None = None
    history: list[ConversationTurn] = Field(default_factory=list)
    """Filled on the inference worker from the run records (never sent by the workflow:
    conversations stay out of workflow history)."""


class RouteResult(BaseModel):
    route: Route
    confident: bool
    """Confidence reached the router threshold: `draft_plan` is used and `plan` is skipped."""
    draft_plan: Plan | None = None


class PlanInput(BaseModel):
    question: str
    route: Route
    attempt: int = 0
    previous_steps: list[StepOutcome] = Field(default_factory=list)
    plan_error: StepError | None = None
    """Why the previous plan was rejected, so the planner can correct it."""
    tenant: str = "default"
    conversation_id: str | None = None
    history: list[ConversationTurn] = Field(default_factory=list)
    """Filled on the inference worker from the run records (never sent by the workflow:
    conversations stay out of workflow history)."""


class PlanResult(BaseModel):
    plan: Plan
    tier: Tier = Tier.RULES
    route: Route | None = None
    """The planner's own reading of the request, when it re-routed (the heavy tier)."""
    error: StepError | None = None
    """Set when the model gave no usable plan after every decode: this round's plan is
    rejected with this error (the plan is then empty)."""


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


class JoinResult(BaseModel):
    decision: JoinDecision
    reason: str = ""


class RespondInput(BaseModel):
    question: str
    route: Route
    steps: list[StepOutcome]
    plan_error: StepError | None = None
    run_id: str = ""
    tenant: str = "default"
    conversation_id: str | None = None
    history: list[ConversationTurn] = Field(default_factory=list)
    """Filled on the inference worker from the run records (never sent by the workflow:
    conversations stay out of workflow history)."""


class RespondResult(BaseModel):
    answer: str
    first_token_at: datetime | None = None
    """When the first piece of the answer existed (and was published to the run's token
    stream): the run's time to first token is measured to here."""


class StoreInput(BaseModel):
    tenant: str
    question: str
    conversation_id: str | None = None
    result: AgentResult
    use_cache: bool = True


class StoreResult(BaseModel):
    recorded: bool
    cached: bool
    cache_ttl_s: int | None = None
