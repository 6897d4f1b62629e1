"""The approval gate: a side effect above its thresholds waits here for a decision.

Owned by `AgentWorkflow` (its `approve` update decides) and handed to the DAG dispatch in
the graph's state. While a request waits, ops see it in the `progress` query, in the
run's current details and as `AgentAwaiting = "approval"`; nothing else of the run is
held back but the side effect itself (and what depends on it).
"""

from __future__ import annotations

import asyncio
from datetime import timedelta

from temporalio import workflow
from temporalio.exceptions import ApplicationError

from agentkeel.schemas.actor import SYSTEM_ROLE, name_skeleton, same_person
from agentkeel.schemas.approvals import (
    ApprovalAnswer,
    ApprovalDecision,
    ApprovalRecord,
    ApprovalRequest,
)
from agentkeel.schemas.errors import (
    APPROVAL_ALREADY_DECIDED,
    APPROVER_NOT_ALLOWED,
)
from agentkeel.schemas.progress import RunProgress
from agentkeel.schemas.search_attributes import AGENT_AWAITING
from agentkeel.schemas.tools.spec import money
from agentkeel.sdk.serving import active_domain
from agentkeel.workflows.metrics import observe_approval
from agentkeel.workflows.release import since

AWAITING_APPROVAL = "approval"


def refused(error_type: str, message: str) -> ApplicationError:
    """A decision the run cannot take: the update fails with this type, never retried (the
    same decision would be refused again)."""
    return ApplicationError(message, type=error_type, non_retryable=True)


CANCELLED_RECORD_PATCH = "approval-cancel-record-v1"
"""A wait cancelled while the run goes on is recorded `cancelled`, so its id is never
given to the next request (runs recorded before it numbered the next request the same)."""


class ApprovalGate:
    def __init__(self, progress: RunProgress) -> None:
        self._progress = progress
        self.identities = False
        """Approvers are checked as identities (`check_approver`): set by runs under
        `EFFECT_RULES_PATCH`; a run recorded before it keeps the check it was made with."""
        self._decision: ApprovalDecision | None = None
        self._lock = asyncio.Lock()
        """One request at a time: a decision always answers the request it was made for."""

    def check(self, decision: ApprovalDecision, *, named: bool = True) -> None:
        """The `approve` update's validator: reject what cannot be applied, before history.

        A decision names the approval it decides (`approval_id`): one for another, an
        unknown or a decided approval, or one naming none, is refused with a named error
        (`ApprovalIdRequired`, `ApprovalNotPending`, `UnknownApproval`,
        `ApprovalAlreadyDecided`), so it never lands on a request its approver did not see.
        `named=False` (the update's handler, which also runs on replay): a decision
        recorded before `approval_id` was required still applies to what was pending."""
        approval_id = decision.approval_id
        if approval_id is None and not named and self._progress.awaiting is not None:
            approval_id = self._progress.awaiting.approval_id
        problem = self._progress.refuse_decision(approval_id)
        if problem is None and self._decision is not None:
            problem = (APPROVAL_ALREADY_DECIDED, f"approval {approval_id} has already been decided")
        if problem is not None:
            raise refused(*problem)
        pending = self._progress.awaiting
        assert pending is not None
        if self.identities:
            check_approver(pending, decision)
            return
        requester = pending.actor.name
        if requester and decision.approver.casefold() == requester.casefold():
            raise refused(
                APPROVER_NOT_ALLOWED, f"{decision.approver} asked for this and may not approve it"
            )

    def decide(self, decision: ApprovalDecision) -> ApprovalAnswer:
        self.check(decision, named=False)
        pending = self._progress.awaiting
        assert pending is not None
        self._decision = decision
        return ApprovalAnswer(
            approval_id=pending.approval_id,
            step_id=pending.step_id,
            call_id=pending.call_id,
            tool=pending.tool,
            approved=decision.approved,
            approver=decision.approver,
        )

    async def wait_for(self, request: ApprovalRequest, decide_within: timedelta) -> ApprovalRecord:
        """Publish `request`, wait for a decision or the timeout, and record the outcome."""
        async with self._lock:
            self._decision = None
            now = workflow.now()
            request = request.model_copy(
                update={
                    "approval_id": len(self._progress.approvals) + 1,
                    "requested_at": now,
                    "deadline": now + decide_within,
                }
            )
            self._progress.awaiting = request
            previous_stage = self._progress.stage
            self._show(
                f"awaiting approval by {request.approver_role}: {request.tool} "
                f"{request.call_id} ({money(request.amount_cents)}), {request.why}"
            )
            workflow.upsert_search_attributes([AGENT_AWAITING.value_set(AWAITING_APPROVAL)])
            observe_approval(None)
            try:
                await workflow.wait_condition(
                    lambda: self._decision is not None,
                    timeout=decide_within,
                    # The timer's name in the Web UI's history: what it bounds.
                    timeout_summary=(
                        f"approval {request.approval_id} deadline: {request.tool} "
                        f"{request.call_id} ({request.approver_role})"
                    ),
                )
            except TimeoutError:
                pass
            except BaseException:  # cancelled while waiting: the wait ends without a decision
                observe_approval("abandoned")
                if not since(CANCELLED_RECORD_PATCH):
                    raise  # recorded before: the next request took this id again
                self._progress.approvals.append(
                    ApprovalRecord(
                        request=request,
                        approved=False,
                        cancelled=True,
                        reason="cancelled while it waited",
                        decided_at=workflow.now(),
                    )
                )
                raise
            finally:
                self._progress.awaiting = None
                workflow.upsert_search_attributes([AGENT_AWAITING.value_unset()])
                self._show(previous_stage)
            record = self._record(request)
            self._progress.approvals.append(record)
            observe_approval(
                "timed_out" if record.timed_out else "approved" if record.approved else "rejected"
            )
            return record

    def _record(self, request: ApprovalRequest) -> ApprovalRecord:
        decision = self._decision
        if decision is None:
            return ApprovalRecord(
                request=request,
                approved=False,
                timed_out=True,
                reason="no decision before the approval deadline",
                decided_at=workflow.now(),
            )
        return ApprovalRecord(
            request=request,
            approved=decision.approved,
            approver=decision.approver,
            approved_by=decision.by,
            reason=decision.reason,
            decided_at=workflow.now(),
        )

    def _show(self, text: str) -> None:
        workflow.set_current_details(text)
        self._progress.stage = text


def check_approver(pending: ApprovalRequest, decision: ApprovalDecision) -> None:
    """Refuse a decision its approver may not make: a role the domain does not let approve,
    or the requester itself (by identity, and by how the names look, so a zero-width space
    or a look-alike letter does not make another person). A decision without `by` comes
    from a trusted service (a Temporal client): only its name is compared."""
    requester = pending.actor
    if decision.by is not None:
        allowed = {SYSTEM_ROLE, *active_domain().approver_roles}
        if decision.by.role not in allowed:
            raise refused(
                APPROVER_NOT_ALLOWED,
                f"{decision.by.describe()} may not approve: approvers are "
                f"{', '.join(sorted(allowed))}",
            )
        approver = decision.by.model_copy(update={"name": decision.by.name or decision.approver})
        if same_person(requester, approver):
            raise refused(
                APPROVER_NOT_ALLOWED, f"{approver.describe()} asked for this and may not approve it"
            )
        return
    if requester.name and name_skeleton(requester.name) == name_skeleton(decision.approver):
        raise refused(
            APPROVER_NOT_ALLOWED, f"{decision.approver} asked for this and may not approve it"
        )
