"""Deciding a run's pending approval from outside it (the CLI's `approve`, the gateway)."""

from __future__ import annotations

from temporalio.client import Client, WorkflowUpdateFailedError
from temporalio.exceptions import ApplicationError

from agentkeel.schemas import errors
from agentkeel.schemas.approvals import ApprovalAnswer, ApprovalDecision
from agentkeel.schemas.names import APPROVE_UPDATE, PROGRESS_QUERY
from agentkeel.schemas.progress import RunProgress

__all__ = ["ApprovalRefused", "NothingAwaiting", "decide_approval"]


class ApprovalRefused(Exception):
    """The run refused the decision: `type` names why (`ApprovalIdRequired`,
    `ApprovalNotPending`, `UnknownApproval`, `ApprovalAlreadyDecided`, or the approver's
    refusal), the message says what to send instead."""

    def __init__(self, error_type: str, message: str) -> None:
        super().__init__(f"{error_type}: {message}")
        self.type = error_type
        self.message = message


class NothingAwaiting(ApprovalRefused):
    """The run does not wait for an approval."""


async def decide_approval(
    temporal: Client, workflow_id: str, decision: ApprovalDecision
) -> ApprovalAnswer:
    """Decide approval `decision.approval_id` of the run at `workflow_id`.

    The decision must name the approval its approver saw (`progress.awaiting.approval_id`),
    and goes to the run as it is now (not to a later run under the same id): a decision
    naming none, another, an unknown or a decided approval is refused (`ApprovalRefused`),
    here and again by the run's validator, so it never lands on a request nobody saw.
    """
    run_id = (await temporal.get_workflow_handle(workflow_id).describe()).run_id
    handle = temporal.get_workflow_handle(workflow_id, run_id=run_id)
    progress = await handle.query(PROGRESS_QUERY, result_type=RunProgress)
    refused = progress.refuse_decision(decision.approval_id)
    if refused is not None:
        error_type, message = refused
        if error_type == errors.NO_APPROVAL_PENDING:
            raise NothingAwaiting(error_type, f"{workflow_id}: {message}")
        raise ApprovalRefused(error_type, f"{workflow_id}: {message}")
    try:
        answer: ApprovalAnswer = await handle.execute_update(
            APPROVE_UPDATE, decision, result_type=ApprovalAnswer
        )
    except WorkflowUpdateFailedError as exc:
        cause = exc.cause
        if isinstance(cause, ApplicationError):
            raise ApprovalRefused(cause.type or errors.APPLICATION_ERROR, cause.message) from None
        raise
    return answer
