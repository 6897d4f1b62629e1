"""What a run that continues as new hands to the next run of the same workflow id.

Only `AgentWorkflow` itself writes it (with `workflow.continue_as_new`), and the next run
accepts it only from the run Temporal says it continues (`continued_run_id` equal to
`from_run_id`, and no cron schedule, whose runs also carry a `continued_run_id` and the
client's inputs): a client cannot start a run with a forged one.
"""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field

from agentkeel.schemas.approvals import ApprovalRecord
from agentkeel.schemas.plan.model import Plan
from agentkeel.schemas.result import CacheMatch, CacheStatus, StepError, StepOutcome, Timings
from agentkeel.schemas.route import Route
from agentkeel.schemas.speculation import SpeculationReport
from agentkeel.schemas.usage import RunUsage


class Continuation(BaseModel):
    model_config = ConfigDict(extra="forbid")

    from_run_id: str = Field(min_length=1)
    """The run that wrote it: the next run accepts it only from the run it continues (a
    client cannot know a run id before the server makes it)."""
    started_at: datetime
    """When the first run of the chain started: `timings_ms.total` spans the whole chain."""
    route: Route
    cache: CacheStatus = CacheStatus.MISS
    cache_match: CacheMatch | None = None
    plan: Plan
    """The plan being run; its watches are still RUNNING in `steps`."""
    steps: list[StepOutcome]
    """Every outcome so far (earlier rounds too); large outputs by reference."""
    plan_error: StepError | None = None
    replans: int = Field(default=0, ge=0)
    calls_used: int = Field(default=0, ge=0)
    moved_cents: int = Field(default=0, ge=0)
    allowed_effects: list[str] = Field(default_factory=list)
    timings: Timings = Field(default_factory=Timings)
    warnings: list[str] = Field(default_factory=list)
    approvals: list[ApprovalRecord] = Field(default_factory=list)
    continued: int = Field(default=0, ge=0)
    """How many runs came before this one in the chain."""
    local_policy: bool | None = None
    """Whether the chain's policy steps are served by its CPU worker (asked once per chain)."""
    speculation: SpeculationReport | None = None
    """What the chain's speculative reads did (they run before its first plan only)."""
    usage: RunUsage | None = None
    """What the chain's model calls have used so far: its budget counts on from there."""
