"""Deciding a run's pending approval from outside it (the CLI's `approve`, the gateway)."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import TypeVar

from temporalio.client import Client, WorkflowUpdateFailedError
from temporalio.exceptions import ApplicationError
from temporalio.service import RPCError, RPCStatusCode

from agentkeel.schemas import errors
from agentkeel.schemas.approvals import ApprovalAnswer, ApprovalDecision
from agentkeel.schemas.names import APPROVE_UPDATE, PROGRESS_QUERY
from agentkeel.schemas.progress import RunProgress

__all__ = ["ApprovalRefused", "NothingAwaiting", "decide_approval"]

T = TypeVar("T")


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
    progress = await _when_ready(lambda: handle.query(PROGRESS_QUERY, result_type=RunProgress))
    refused = progress.refuse_decision(decision.approval_id)
    if refused is not None:
        error_type, message = refused
        if error_type == errors.NO_APPROVAL_PENDING:
            raise NothingAwaiting(error_type, f"{workflow_id}: {message}")
        raise ApprovalRefused(error_type, f"{workflow_id}: {message}")
    # One update id for every try: the server takes the decision at most once.
    update_id = f"approve-{decision.approval_id}-{uuid.uuid4().hex[:12]}"
    try:
        return await _when_ready(
            lambda: handle.execute_update(
                APPROVE_UPDATE, decision, id=update_id, result_type=ApprovalAnswer
            )
        )
    except WorkflowUpdateFailedError as exc:
        cause = exc.cause
        if isinstance(cause, ApplicationError):
            raise ApprovalRefused(cause.type or errors.APPLICATION_ERROR, cause.message) from None
        raise


NOT_READY_WAIT_S = 30.0
"""How long a decision waits while the run's workflow task is failing (the server refuses
updates then: `WorkflowNotReady`); a worker moving the run to another release or
restarting causes that for a moment. After it the refusal reaches the caller."""


async def _when_ready(call: Callable[[], Awaitable[T]]) -> T:
    """`call` (a query or the update), tried again while the server says the run is not
    ready for it, for at most `NOT_READY_WAIT_S`; any other error at once."""
    deadline = time.monotonic() + NOT_READY_WAIT_S
    delay_s = 0.25
    while True:
        try:
            return await call()
        except RPCError as exc:
            if not _not_ready(exc) or time.monotonic() + delay_s > deadline:
                raise
        await asyncio.sleep(delay_s)
        delay_s = min(delay_s * 2, 2.0)


def _not_ready(exc: RPCError) -> bool:
    """The server's `WorkflowNotReady`: a refusal for now, not of the decision."""
    if exc.status != RPCStatusCode.FAILED_PRECONDITION:
        return False
    try:
        details = exc.grpc_status.details
    except Exception:  # status bytes that do not parse: not the refusal we wait out
        return False
    return any(detail.type_url.endswith("WorkflowNotReadyFailure") for detail in details)
