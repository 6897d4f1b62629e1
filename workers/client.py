"""The Python client helper: start an agent run and wait for its result."""

from __future__ import annotations

import uuid

from temporalio.client import Client, WorkflowHandle

from schemas.request import AgentRequest
from schemas.result import AgentResult
from workflows.agent import AgentWorkflow


def new_workflow_id(prefix: str = "ask") -> str:
    return f"{prefix}-{uuid.uuid4().hex[:16]}"


async def start_run(
    client: Client, request: AgentRequest, *, task_queue: str, workflow_id: str | None = None
) -> WorkflowHandle[AgentWorkflow, AgentResult]:
    return await client.start_workflow(
        AgentWorkflow.run,
        request,
        id=workflow_id or new_workflow_id(),
        task_queue=task_queue,
    )


async def run_agent(
    client: Client, request: AgentRequest, *, task_queue: str, workflow_id: str | None = None
) -> AgentResult:
    handle = await start_run(client, request, task_queue=task_queue, workflow_id=workflow_id)
    return await handle.result()
