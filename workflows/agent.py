"""`AgentWorkflow`: one durable agent run. The public entry point of agentkeel."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import ValidationError
from temporalio import workflow
from temporalio.exceptions import ApplicationError, is_cancelled_exception
from temporalio.langgraph import graph

from schemas.approvals import ApprovalAnswer, ApprovalDecision
from schemas.errors import INVALID_REQUEST
from schemas.names import AGENT_WORKFLOW, APPROVE_UPDATE, PROGRESS_QUERY
from schemas.progress import RunProgress
from schemas.queues import inference_queue
from schemas.request import AgentRequest, LegacyAgentRequest
from schemas.result import AgentResult
from workflows.approvals import ApprovalGate
from workflows.cancellation import announce_cancellation
from workflows.dag.run_context import RunContext
from workflows.graph import AGENT_GRAPH
from workflows.nodes.run_record import record_cancelled_run
from workflows.state import AgentState

WORKFLOW_NAME = AGENT_WORKFLOW
# Each run may loop plan → execute → join a few times; LangGraph counts every node.
RECURSION_LIMIT = 64


MAX_ERROR_CHARS = 2000
"""An error message names every bad field, but never grows with a hostile input's size."""


AUTHORITY_PATCH = "authority-v1"
"""Actors, strict input checks, plan limits, side effects only when asked, approvals and
cancellation of calls in flight. A run whose history predates it replays as it ran."""


def parse_request(inputs: Sequence[Any], *, strict: bool = True) -> AgentRequest:
    """Validate the JSON input; a bad one fails the run at once, naming every bad field.

    The inputs are decoded as plain JSON and validated here, rather than typed as
    `AgentRequest` in the signature: a decode failure there would leave the workflow task
    retrying forever, and widening `failure_exception_types` to pydantic errors would also
    fail runs in flight permanently on any later validation bug. For the same reason the
    run takes any number of inputs and refuses all but exactly one.
    """
    if len(inputs) != 1:
        raise _invalid(f"AgentWorkflow takes one input (the request JSON), got {len(inputs)}")
    try:
        if not strict:
            return LegacyAgentRequest.model_validate(inputs[0]).upgraded()
        return AgentRequest.model_validate(inputs[0])
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p)[:64] for p in e['loc']) or 'input'}: {e['msg']}"
            for e in exc.errors()
        )
        raise _invalid(f"invalid AgentWorkflow input: {problems}") from None


def _invalid(message: str) -> ApplicationError:
    if len(message) > MAX_ERROR_CHARS:
        message = message[: MAX_ERROR_CHARS - 1] + "…"
    return ApplicationError(message, type=INVALID_REQUEST, non_retryable=True)


@workflow.defn(name=WORKFLOW_NAME)
class AgentWorkflow:
    """Runs the agent graph for one `AgentRequest` (as JSON) and returns an `AgentResult`."""

    def __init__(self) -> None:
        self._progress = RunProgress()
        self._gate = ApprovalGate(self._progress)

    @workflow.query(name=PROGRESS_QUERY)
    def progress(self) -> RunProgress:
        """Stage, route, live step outcomes and any pending approval, for ops and dashboards."""
        return self._progress

    @workflow.update(name=APPROVE_UPDATE)
    async def approve(self, decision: ApprovalDecision) -> ApprovalAnswer:
        """Approve or reject the side effect this run waits for (see `progress.awaiting`)."""
        return self._gate.decide(decision)

    @approve.validator
    def _validate_approve(self, decision: ApprovalDecision) -> None:
        # Rejected updates never reach history: a second decision, or one with nothing
        # pending, is refused here with the reason.
        self._gate.check(decision)

    @workflow.run
    async def run(self, *inputs: Any) -> AgentResult:
        """One input: `AgentRequest` JSON (a model instance from Python callers works too)."""
        authority = workflow.patched(AUTHORITY_PATCH)
        request = parse_request(inputs, strict=authority)
        queue = workflow.info().task_queue
        state: AgentState = {
            "request": request,
            "started_at": workflow.now(),
            # Derived, so a deployment on queue X pairs with inference queue X-inference.
            "inference_queue": inference_queue(queue),
            "steps": [],
            "replans": 0,
            "warnings": [],
            "progress": self._progress,
            "context": RunContext(
                tool_queue=queue, request=request, gate=self._gate, authority=authority
            ),
        }
        app = graph(AGENT_GRAPH).compile()
        try:
            final = await app.ainvoke(state, config={"recursion_limit": RECURSION_LIMIT})
        except BaseException as exc:
            if authority and is_cancelled_exception(exc):
                self._progress.stage = "cancelled"
                # What ran before the cancel is recorded (a refund that had committed,
                # its approval), and the token stream tells readers to stop waiting.
                await record_cancelled_run(state, self._progress)
                await announce_cancellation()
            raise
        self._progress.stage = "done"
        return final["result"]
