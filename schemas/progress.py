"""What the `progress` query of `AgentWorkflow` answers while a run is in flight."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, Field

from agentkeel.schemas import errors
from agentkeel.schemas.approvals import ApprovalRecord, ApprovalRequest
from agentkeel.schemas.result import StepOutcome
from agentkeel.schemas.route import Route


class Waiting(BaseModel):
    """A step the run is waiting on: a `wait` timer, or a watch between two of its runs."""

    step_id: str
    tool: str
    what: str
    """In words: "order 1002: status in ['shipped', 'delivered']" or "2 h"."""
    until: datetime | None = None
    """When the wait ends, or the watch runs next; None: when a slot frees (a call that
    waits for its downstream, since `since`)."""
    since: datetime | None = None
    deadline: datetime | None = None
    """For a watch: when it stops watching (its `timeout_s`)."""
    runs: int = 0
    """For a watch: how often the step has run so far."""


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
    waiting: list[Waiting] = Field(default_factory=list)
    """Timers and watches the run is waiting on now (also `AgentWaiting = true`)."""
    continued: int = 0
    """How often this run has continued as new (its history restarts each time)."""

    def refuse_decision(self, approval_id: int | None) -> tuple[str, str] | None:
        """Why a decision for `approval_id` cannot apply to this run now, as (error type,
        message), or None when it is the approval the run waits for. The message says what
        to send instead."""
        pending = self.awaiting
        if approval_id is None and pending is None:
            return errors.NO_APPROVAL_PENDING, "this run is not waiting for an approval"
        if approval_id is None:
            assert pending is not None
            now = f"approval {pending.approval_id} ({pending.tool} {pending.call_id}) is pending"
            return errors.APPROVAL_ID_REQUIRED, (
                "a decision must name the approval it decides: send approval_id, the "
                f"approval_id of the run's progress.awaiting ({now})"
            )
        if pending is not None and pending.approval_id == approval_id:
            return None
        for record in self.approvals:
            if record.request.approval_id == approval_id:
                how = (
                    "timed out"
                    if record.timed_out
                    else "cancelled"
                    if record.cancelled
                    else "approved"
                    if record.approved
                    else "rejected"
                )
                return errors.APPROVAL_ALREADY_DECIDED, (
                    f"approval {approval_id} ({record.request.tool} {record.request.call_id}) "
                    f"was {how} already"
                )
        asked = pending.approval_id if pending is not None else len(self.approvals)
        if approval_id < 1 or approval_id > asked:
            return errors.UNKNOWN_APPROVAL, f"this run never asked for approval {approval_id}"
        if pending is None:
            return errors.NO_APPROVAL_PENDING, (
                f"approval {approval_id} is not pending: this run waits for no approval"
            )
        now = f"approval {pending.approval_id} ({pending.tool} {pending.call_id}) is"
        return errors.APPROVAL_NOT_PENDING, f"approval {approval_id} is not pending; {now}"
