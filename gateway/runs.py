"""Reading a run for the gateway: who it acts for, its state, progress and result.

Everything comes from Temporal when asked (the gateway keeps nothing), so a restarted
gateway, or another replica, answers the same.
"""

from __future__ import annotations

import asyncio
from typing import Any

from temporalio.client import (
    WorkflowExecutionDescription,
    WorkflowExecutionStatus,
    WorkflowFailureError,
    WorkflowHandle,
)
from temporalio.service import RPCError, RPCStatusCode

from agentkeel.client.agent_client import AgentClient
from agentkeel.client.answer_watch import announced_answer, first_answer
from agentkeel.gateway.keys import Caller, Refused
from agentkeel.schemas.actor import Actor
from agentkeel.schemas.gateway import RunState, RunView
from agentkeel.schemas.names import AGENT_WORKFLOW
from agentkeel.schemas.progress import RunProgress
from agentkeel.schemas.request import AgentRequest
from agentkeel.schemas.result import AgentResult

PROGRESS_TIMEOUT_S = 2.0
"""A query needs a worker to answer it; without one the view says so instead of hanging."""


def not_found(workflow_id: str) -> Refused:
    return Refused(404, f"no run {workflow_id!r}", "run-not-found")


class Runs:
    def __init__(self, client: AgentClient) -> None:
        self.client = client

    def handle(self, workflow_id: str) -> WorkflowHandle[Any, AgentResult]:
        return self.client.temporal.get_workflow_handle(workflow_id, result_type=AgentResult)

    async def checked(self, caller: Caller, workflow_id: str) -> WorkflowExecutionDescription:
        """The run as Temporal describes it, once `caller` may see it; a run it may not see
        is `not_found` (its existence is not told)."""
        handle = self.handle(workflow_id)
        try:
            described = await handle.describe()
            status = described.status
            if described.workflow_type != AGENT_WORKFLOW:
                raise not_found(workflow_id)  # the warmer, fan-out children: not runs of users
            if caller.key is not None:
                tenant, actor = await self._owner(handle)
                if not caller.may_see(tenant, actor):
                    raise not_found(workflow_id)
        except RPCError as exc:
            if exc.status in (RPCStatusCode.NOT_FOUND, RPCStatusCode.INVALID_ARGUMENT):
                raise not_found(workflow_id) from None
            raise
        if status is None:
            raise not_found(workflow_id)
        return described

    async def view(self, workflow_id: str, described: WorkflowExecutionDescription) -> RunView:
        """The run as `checked` described it, with its progress or outcome."""
        handle = self.handle(workflow_id)
        run_id = described.run_id
        assert described.status is not None  # `checked` refuses a run without one
        state = state_of(described.status)
        if state is RunState.RUNNING:
            # Answered once recorded (`schemas.answers`): the run closes with it a moment
            # later, and a view read then agrees with the `wait=true` that returned it.
            answered = await announced_answer(self.client.redis, workflow_id, run_id)
            if answered is not None:
                return RunView(
                    workflow_id=workflow_id,
                    run_id=run_id,
                    state=RunState.COMPLETED,
                    result=await self.client.resolve_outputs(answered),
                )
            return RunView(
                workflow_id=workflow_id,
                run_id=run_id,
                state=state,
                progress=await self.progress(workflow_id),
            )
        result, error = await self.outcome(handle)
        return RunView(
            workflow_id=workflow_id, run_id=run_id, state=state, result=result, error=error
        )

    async def progress(self, workflow_id: str) -> RunProgress | None:
        """The `progress` query, or None when no worker answers it in time."""
        try:
            async with asyncio.timeout(PROGRESS_TIMEOUT_S):
                return await self.client.progress(workflow_id)
        except (TimeoutError, RPCError):
            return None

    async def outcome(
        self, handle: WorkflowHandle[Any, AgentResult]
    ) -> tuple[AgentResult | None, str | None]:
        """A finished run's result with outputs read back, or why it has none. For a run
        just started (`handle` knows its run id) the answer's announcement counts as
        finished: it comes once the answer is recorded, before the run closes."""
        try:
            result = await first_answer(
                handle.result(), self.client.redis, handle.id, handle.result_run_id or ""
            )
            return await self.client.resolve_outputs(result), None
        except WorkflowFailureError as exc:
            return None, str(exc.cause or exc)

    async def owner(self, workflow_id: str) -> tuple[str, Actor]:
        """The tenant and actor a run of `AgentWorkflow` acts for (`checked` first)."""
        return await self._owner(self.handle(workflow_id))

    async def _owner(self, handle: WorkflowHandle[Any, AgentResult]) -> tuple[str, Actor]:
        """Tenant and actor from the run's own input (its first history event), so runs
        started through any SDK are checked alike. An input that is no `AgentRequest` is
        `not_found`, as for any run that is not the gateway's: what the error would say
        tells a caller that the run exists."""
        async for event in handle.fetch_history_events(page_size=1):
            payloads = event.workflow_execution_started_event_attributes.input.payloads
            if not payloads:
                break
            try:
                [request] = await self.client.temporal.data_converter.decode(
                    [payloads[0]], [AgentRequest]
                )
            except Exception:  # any payload a client could write: none is a request
                raise not_found(handle.id) from None
            assert isinstance(request, AgentRequest)
            return request.tenant, request.actor
        raise not_found(handle.id)


def state_of(status: WorkflowExecutionStatus) -> RunState:
    return RunState(status.name.lower())
