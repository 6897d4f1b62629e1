"""`AgentWorkflow`: one durable agent run. The public entry point of agentkeel."""

from __future__ import annotations

from pydantic import ValidationError
from temporalio import workflow
from temporalio.langgraph import graph

from schemas.progress import RunProgress
from schemas.request import AgentRequest
from schemas.result import AgentResult
from workflows.graph import AGENT_GRAPH
from workflows.state import AgentState

WORKFLOW_NAME = "AgentWorkflow"
INFERENCE_QUEUE_SUFFIX = "-inference"
# Each run may loop plan → execute → join a few times; LangGraph counts every node.
RECURSION_LIMIT = 64


@workflow.defn(name=WORKFLOW_NAME, failure_exception_types=[ValidationError])
class AgentWorkflow:
    """Runs the agent graph for one `AgentRequest` and returns an `AgentResult`.

    An invalid request fails the run at once (not a stuck workflow task) with the
    validation message naming the fields, thanks to `failure_exception_types`.
    """

    def __init__(self) -> None:
        self._progress = RunProgress()

    @workflow.query(name="progress")
    def progress(self) -> RunProgress:
        """Stage, route and live step outcomes of the run, for ops and dashboards."""
        return self._progress

    @workflow.run
    async def run(self, request: AgentRequest) -> AgentResult:
        queue = workflow.info().task_queue
        state: AgentState = {
            "request": request,
            "started_at": workflow.now(),
            "tool_queue": queue,
            # Derived, so a deployment on queue X pairs with inference queue X-inference.
            "inference_queue": queue + INFERENCE_QUEUE_SUFFIX,
            "steps": [],
            "replans": 0,
            "warnings": [],
            "progress": self._progress,
        }
        app = graph(AGENT_GRAPH).compile()
        final = await app.ainvoke(state, config={"recursion_limit": RECURSION_LIMIT})
        self._progress.stage = "done"
        return final["result"]
