"""The route of approvals: an approver decides on the side effect a run waits for.

Apart from the runs' routes because it is the one that changes what a run does on a
person's word: the approver is checked here (`Caller.approver`) and again by the workflow.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from agentkeel.client.approvals import ApprovalRefused, decide_approval
from agentkeel.gateway.keys import Refused
from agentkeel.gateway.routes.dependencies import PROBLEMS, CallerDep, GatewayDep
from agentkeel.schemas import errors
from agentkeel.schemas.approvals import ApprovalAnswer, ApprovalDecision
from agentkeel.schemas.gateway import GatewayApproval

__all__ = ["router"]

router = APIRouter()


@router.post("/v1/runs/{workflow_id}/approve", response_model=ApprovalAnswer, responses=PROBLEMS)
async def approve_run(
    workflow_id: str, body: GatewayApproval, who: CallerDep, gw: GatewayDep
) -> Any:
    """Approve or reject the side effect the run waits for (`progress.awaiting`)."""
    by = who.approver(body.approver)
    await gw.runs.checked(who, workflow_id)
    assert by.name is not None  # `approver` names everyone it lets decide
    decision = ApprovalDecision(
        approved=body.approved,
        approver=by.name,
        reason=body.reason,
        approval_id=body.approval_id,
        by=by,  # the workflow checks who this is: the role may approve, it did not ask
    )
    try:
        return await decide_approval(gw.client.temporal, workflow_id, decision)
    except ApprovalRefused as exc:
        raise Refused(_status(exc), str(exc), _KINDS.get(exc.type)) from None


_KINDS = {
    errors.APPROVAL_ID_REQUIRED: "approval-id-required",
    errors.NO_APPROVAL_PENDING: "no-approval-pending",
    errors.APPROVAL_NOT_PENDING: "approval-not-pending",
    errors.UNKNOWN_APPROVAL: "unknown-approval",
    errors.APPROVAL_ALREADY_DECIDED: "approval-already-decided",
    errors.APPROVER_NOT_ALLOWED: "approver-not-allowed",
}
"""Each refusal of a decision, its own problem type (any other: the status's)."""


def _status(refused: ApprovalRefused) -> int:
    """422 for a decision that names no approval (the body lacks what it must send), 409
    for one the run's state refuses (another, a decided or an unknown approval)."""
    return 422 if refused.type == errors.APPROVAL_ID_REQUIRED else 409
