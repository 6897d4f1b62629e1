"""Deciding a run's pending approval from outside it (the CLI's `approve`, the gateway)."""

from __future__ import annotations

from temporalio.client import Client

from agentkeel.schemas.approvals import ApprovalAnswer, ApprovalDecision
from agentkeel.schemas.names import APPROVE_UPDATE, PROGRESS_QUERY
from agentkeel.schemas.progress import RunProgress


class NothingAwaiting(Exception):
    """The run does not wait for an approval."""


async def decide_approval(
    temporal: Client, workflow_id: str, decision: ApprovalDecision
) -> ApprovalAnswer:
    """Decide the side effect the run at `workflow_id` waits for, as it is now.

    The decision names the call the run shows as awaiting and goes to that run (not to a
    later run under the same id), so it can only land on the request it was made for. A run
    that waits for nothing, or was decided already, refuses it.
    """
    run_id = (await temporal.get_workflow_handle(workflow_id).describe()).run_id
    handle = temporal.get_workflow_handle(workflow_id, run_id=run_id)
    progress = await handle.query(PROGRESS_QUERY, result_type=RunProgress)
    if progress.awaiting is None:
        raise NothingAwaiting(f"{workflow_id} is not waiting for an approval")
    if decision.approval_id is None:
        # Pinned to what is pending now: if it changes before the update lands (a deadline
        # passed, the next request began), the run refuses the decision.
        decision = decision.model_copy(update={"approval_id": progress.awaiting.approval_id})
    answer: ApprovalAnswer = await handle.execute_update(
        APPROVE_UPDATE, decision, result_type=ApprovalAnswer
    )
    return answer
