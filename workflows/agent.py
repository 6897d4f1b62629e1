"""`AgentWorkflow`: one durable agent run. The public entry point of agentkeel."""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError
from temporalio import workflow
from temporalio.exceptions import ApplicationError
from temporalio.langgraph import graph

from schemas.errors import INVALID_REQUEST
from schemas.names import AGENT_WORKFLOW, PROGRESS_QUERY
from schemas.progress import RunProgress
from schemas.queues import inference_queue
from schemas.request import AgentRequest
from schemas.result import AgentResult
from workflows.graph import AGENT_GRAPH
from workflows.state import AgentState

WORKFLOW_NAME = AGENT_WORKFLOW
# Each run may loop plan → execute → join a few times; LangGraph counts every node.
RECURSION_LIMIT = 64


def parse_request(raw: Any) -> AgentRequest:
    """Validate the JSON input; a bad one fails the run at once, naming every bad field.

    The input is decoded as plain JSON and validated here, rather than typed as
    `AgentRequest` in the signature: a decode failure there would leave the workflow task
    retrying forever, and widening `failure_exception_types` to pydantic errors would also
    fail runs in flight permanently on any later validation bug.
    """
    try:
        return AgentRequest.model_validate(raw)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'input'}: {e['msg']}" for e in exc.errors()
        )
        raise ApplicationError(
            f"invalid AgentWorkflow input: {problems}", type=INVALID_REQUEST, non_retryable=True
        ) from None


@workflow.defn(name=WORKFLOW_NAME)
class AgentWorkflow:
    """Runs the agent graph for one `AgentRequest` (as JSON) and returns an `AgentResult`."""

    def __init__(self) -> None:
        self._progress = RunProgress()

    @workflow.query(name=PROGRESS_QUERY)
    def progress(self) -> RunProgress:
        """Stage, route and live step outcomes of the run, for ops and dashboards."""
        return self._progress

    @workflow.run
    async def run(self, request: Any) -> AgentResult:
        """`request` is `AgentRequest` JSON (a model instance from Python callers works too)."""
        request = parse_request(request)
        queue = workflow.info().task_queue
        state: AgentState = {
            "request": request,
            "started_at": workflow.now(),
            "tool_queue": queue,
            # Derived, so a deployment on queue X pairs with inference queue X-inference.
            "inference_queue": inference_queue(queue),
            "steps": [],
            "replans": 0,
            "warnings": [],
            "progress": self._progress,
        }
        app = graph(AGENT_GRAPH).compile()
        final = await app.ainvoke(state, config={"recursion_limit": RECURSION_LIMIT})
        self._progress.stage = "done"
        return final["result"]
