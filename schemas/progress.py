"""What the `progress` query of `AgentWorkflow` answers while a run is in flight."""

from __future__ import annotations

from pydantic import BaseModel, Field

from schemas.approvals import ApprovalRecord, ApprovalRequest
from schemas.result import StepOutcome
from schemas.route import Route


class RunProgress(BaseModel):
    stage: str = "starting"
    """The graph node at work, in words ("routing", "running 3 steps (round 0)", ...)."""
    route: Route | None = None
    replans: int = 0
    steps: list[StepOutcome] = Field(default_factory=list)
    """Every step so far, updated live as tool activities start and finish."""
    awaiting: ApprovalRequest | None = None
    """The side effect waiting for a decision (the `approve` update), if any."""
    approvals: list[ApprovalRecord] = Field(default_factory=list)
    """Decisions made so far."""
