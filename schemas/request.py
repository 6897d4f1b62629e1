"""The public request contract of `AgentWorkflow` (JSON on the wire)."""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StrictBool, StrictInt

from agentkeel.schemas.actor import SYSTEM_ACTOR, Actor
from agentkeel.schemas.deadline import MAX_DEADLINE_MS
from agentkeel.schemas.plan.model import Plan
from agentkeel.schemas.text import FreeText, Identifier
from agentkeel.schemas.usage import RunBudget

MAX_QUESTION_CHARS = 4000


def _not_blank(value: str) -> str:
    if not value.strip():
        raise ValueError("question must not be blank")
    return value


NOT_BLANK = AfterValidator(_not_blank)


class RunOptions(BaseModel):
    """Per-request knobs; every field has a default so old clients keep working."""

    model_config = ConfigDict(extra="forbid")

    use_cache: bool = True
    """Look up and store the path cache for this run."""
    refresh_cache: bool = False
    """Skip the lookup but store the result: how the cache warmer renews hot entries."""
    read_only: bool = False
    """Reject any plan with a side-effecting tool (the cache warmer's runs never move money)."""
    scheduled_effects: bool = False
    """A run a Temporal Schedule starts may make side effects: without it every scheduled
    run is read-only. Only an actor whose role may approve (or `system`) may set it."""
    max_concurrency: int = Field(default=5, ge=1, le=64)
    """Most tool activities of this run in flight at once."""
    max_replans: int = Field(default=2, ge=0, le=5)
    """How often `join` may send the run back to planning."""
    max_plan_steps: int = Field(default=16, ge=1, le=64)
    """A plan with more steps is rejected (`PlanTooLarge`) before anything runs."""
    max_fan_out: int = Field(default=50, ge=1, le=500)
    """A `for_each` step over a longer list fails (`FanOutTooLarge`) without running."""
    max_tool_calls: int = Field(default=100, ge=1, le=500)
    """Tool activities the whole run may start, over every planning round; calls past it
    fail (`ToolCallLimit`). Keeps a run's history well inside Temporal's limits. (The
    re-runs of a watched step count once: its timeout bounds them.)"""
    watch_every_s: float | None = Field(default=None, ge=1, le=24 * 3600)
    """Seconds between the runs of every watched (`repeat`) step, overriding the plan's."""
    continue_after_runs: int = Field(default=100, ge=1, le=1000)
    """After this many re-runs of watched steps a run continues as new (same workflow id,
    carrying its plan, outputs and deadlines), so its history stays small however long
    it watches."""
    speculate: StrictBool = True
    """While the heavy model plans, start the reads the router's reading predicts (cached,
    idempotent tools only); `false` waits for the plan."""
    replan_patch: StrictBool = False
    """A replan patches the round before it: the planner writes only the steps to replace
    (same id) or add, and the round's other steps are kept, those that succeeded with
    their results (not run again), those that never ran as they were written. A replan
    then decodes what changes, not the whole plan again."""
    replan_ahead: StrictBool = True
    """Where a step failed and a replan may follow, ask for the next plan beside the join's
    decision (one model stage for the failure, not two); `false` asks only once the join
    said `replan` (no plan's tokens spent where it says `finish`)."""
    deadline_ms: StrictInt | None = Field(default=None, gt=0, le=MAX_DEADLINE_MS)
    """How long the caller will wait for the answer, in ms. The run plans to meet it from
    measured latencies (a lighter tier, a higher concurrency cap, leaving out optional
    steps), lists its trades in `result.deadline`, and says at once when it cannot."""
    budget: RunBudget | None = None
    """What the run may spend on models (tokens, cost): past `degrade_at` of it the run uses
    the light tier, once spent it stops with `BudgetExhausted`. None: the deployment's
    `AGENTKEEL_RUN_BUDGET_*` where `AgentClient` or the gateway starts the run, else none."""


class AgentRequest(BaseModel):
    """Input of `AgentWorkflow`. Only `question` is required; unknown fields are rejected."""

    model_config = ConfigDict(extra="forbid")

    question: Annotated[FreeText, NOT_BLANK] = Field(min_length=1, max_length=MAX_QUESTION_CHARS)
    conversation_id: Identifier | None = None
    tenant: Identifier = "default"
    actor: Actor = SYSTEM_ACTOR
    """Whose authority the run's tools act with. Absent: a trusted service (`system`)."""
    request_id: Identifier | None = None
    """The caller's id for this request: every side effect's idempotency key derives from
    it, so the same request sent again never repeats a side effect."""
    usage_key: Identifier | None = None
    """Whose use the run's model tokens count as besides its tenant's (metrics, the per-key
    budget of `AGENTKEEL_BUDGET_*_PER_KEY`): the gateway sets its API key's id; a service
    may name its own (a team, a product). None: the tenant's alone."""
    options: RunOptions = Field(default_factory=RunOptions)
    plan: Plan | None = None
    """The plan to run, as a planner would write it: no route or plan step is asked for
    (the answer is still written by the respond step). Validated against the catalog and
    held to the same authority, approval and limit rules as a planned one; a plan with
    side effects only from an actor whose role may send plans (`Role.may_send_plans`)."""


class LegacyAgentRequest(BaseModel):
    """The request as runs started before actors and strict identifiers validated it.

    Used only to replay those runs (see `workflows.agent.AUTHORITY_PATCH`): a run in flight
    must decode its input as it did when it started, or its history no longer replays.
    """

    model_config = ConfigDict(extra="forbid")

    question: Annotated[str, NOT_BLANK] = Field(min_length=1, max_length=MAX_QUESTION_CHARS)
    conversation_id: str | None = None
    tenant: str = "default"
    options: RunOptions = Field(default_factory=RunOptions)

    def upgraded(self) -> AgentRequest:
        """The same request in today's model, unvalidated (it was accepted as it is)."""
        return AgentRequest.model_construct(
            question=self.question,
            conversation_id=self.conversation_id,
            tenant=self.tenant,
            actor=SYSTEM_ACTOR,
            request_id=None,
            options=self.options,
            plan=None,
        )
