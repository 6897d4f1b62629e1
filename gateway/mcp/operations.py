"""What agentkeel's MCP tools do, for one caller: start and wait, read, list, decide, cancel.

The same rules as the gateway's routes, through the same parts (`Caller` binds a key's
tenant and actor and says what it may see and decide; `Runs` reads runs from Temporal),
so a tool call can do nothing the gateway would refuse. A run started here is an
ordinary run: it goes on when the MCP client goes away, and `get_run` reads it again.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from temporalio.client import WorkflowExecutionStatus

from agentkeel.client.agent_client import AgentClient
from agentkeel.client.approvals import ApprovalRefused, decide_approval
from agentkeel.gateway.keys import Caller, Refused
from agentkeel.gateway.quotas import Quotas, watches
from agentkeel.gateway.runs import Runs
from agentkeel.gateway.stream_slot import following
from agentkeel.schemas.approvals import ApprovalDecision
from agentkeel.schemas.gateway import RunState, RunView
from agentkeel.schemas.names import AGENT_WORKFLOW
from agentkeel.schemas.progress import RunProgress
from agentkeel.schemas.request import AgentRequest

__all__ = ["Operations", "Progress"]

Progress = Callable[[float, float | None, str], Awaitable[None]]
"""Reports how far a run is: (steps done, steps planned, what it does now)."""
POLL_EVERY_S = 0.5
MAX_LISTED = 50


def view_json(view: RunView) -> dict[str, Any]:
    return view.model_dump(mode="json", exclude_none=True)


def _said(progress: RunProgress) -> tuple[float, float | None, str]:
    done = sum(1 for s in progress.steps if s.status.value in ("succeeded", "failed", "skipped"))
    planned = len(progress.steps) or None
    if progress.awaiting is not None:
        return done, planned, f"awaiting approval: {progress.awaiting.tool}"
    return done, planned, progress.stage


class Operations:
    """agentkeel's runs as MCP tools see them, on `client`'s deployment."""

    def __init__(
        self, client: AgentClient, *, max_wait_s: float, quotas: Quotas | None = None
    ) -> None:
        self.client = client
        self.runs = Runs(client)
        self.max_wait_s = max_wait_s
        self.quotas = quotas
        """The gateway's quotas (None: none kept): a run started here takes a slot of its
        caller's runs (and watches) in flight, as one started by `POST /v1/runs` does."""

    async def start_and_wait(
        self, who: Caller, request: AgentRequest, wait_s: float, progress: Progress
    ) -> dict[str, Any]:
        """Start a run and answer with its result; still running after `wait_s`, its view
        (the run goes on: read it with `get_run`). Waiting holds a stream slot (it follows
        the run, as `GET /v1/runs/{id}/events` does)."""
        admitted = who.admit(request)
        if wait_s <= 0:  # nothing to follow
            return await self._start_and_wait(who, admitted, wait_s, progress)
        async with following(self.quotas, who.quota_id, admitted.tenant):
            return await self._start_and_wait(who, admitted, wait_s, progress)

    async def _start_and_wait(
        self, who: Caller, admitted: AgentRequest, wait_s: float, progress: Progress
    ) -> dict[str, Any]:
        quotas = self.quotas
        lease = None
        if quotas is not None:
            lease = await quotas.reserve_run(
                who.quota_id, admitted.tenant, watching=watches(admitted)
            )
        try:
            handle = await self.client.start(admitted, lane=lease.lane if lease else None)
        except BaseException:
            if quotas is not None and lease is not None:
                await quotas.release(lease)
            raise
        if quotas is not None and lease is not None:
            lease = await quotas.started(lease, handle.id)
        outcome = asyncio.ensure_future(self.runs.outcome(handle))
        try:
            return await self._followed(who, handle, outcome, lease, wait_s, progress)
        finally:  # whatever ended the wait (a client gone, an RPC error), it waits no more
            outcome.cancel()
            await asyncio.gather(outcome, return_exceptions=True)

    async def _followed(
        self,
        who: Caller,
        handle: Any,
        outcome: asyncio.Future[Any],
        lease: Any,
        wait_s: float,
        progress: Progress,
    ) -> dict[str, Any]:
        quotas, run_id = self.quotas, handle.result_run_id or ""
        last: tuple[float, float | None, str] | None = None
        try:
            async with asyncio.timeout(min(wait_s, self.max_wait_s)):
                while not outcome.done():
                    current = await self.runs.progress(handle.id)
                    said = _said(current) if current is not None else None
                    if said is not None and said != last:
                        await progress(*said)
                        last = said
                    await asyncio.wait({outcome}, timeout=POLL_EVERY_S)
        except TimeoutError:
            view = RunView(
                workflow_id=handle.id,
                run_id=run_id,
                state=RunState.RUNNING,
                progress=await self.runs.progress(handle.id),
            )
            return view_json(view)
        result, _ = outcome.result()
        if quotas is not None and lease is not None:
            await quotas.release(lease)  # ended: the slot is free now, not at the next sweep
        if result is None:
            return view_json(
                await self.runs.view(handle.id, await self.runs.checked(who, handle.id))
            )
        done = RunView(
            workflow_id=handle.id, run_id=run_id, state=RunState.COMPLETED, result=result
        )
        return view_json(done)

    async def get_run(self, who: Caller, workflow_id: str) -> dict[str, Any]:
        return view_json(
            await self.runs.view(workflow_id, await self.runs.checked(who, workflow_id))
        )

    async def awaiting_approval(self, who: Caller) -> list[dict[str, Any]]:
        """The runs this caller may see that wait for an approval, with what they wait for."""
        query = (
            f"WorkflowType = '{AGENT_WORKFLOW}' AND ExecutionStatus = 'Running' "
            "AND AgentAwaiting = 'approval'"
        )
        if who.key is not None:
            query += f" AND AgentTenant = '{who.key.tenant}'"  # a tenant is an Identifier
        found: list[dict[str, Any]] = []
        async for run in self.client.temporal.list_workflows(query, limit=MAX_LISTED):
            try:
                await self.runs.checked(who, run.id)
            except Refused:
                continue
            progress = await self.runs.progress(run.id)
            if progress is None or progress.awaiting is None:
                continue  # decided meanwhile
            found.append(
                {"workflow_id": run.id, "awaiting": progress.awaiting.model_dump(mode="json")}
            )
        return found

    async def decide(
        self,
        who: Caller,
        workflow_id: str,
        *,
        approved: bool,
        reason: str,
        approver: str | None,
        approval_id: int,
    ) -> dict[str, Any]:
        by = who.approver(approver)
        await self.runs.checked(who, workflow_id)
        assert by.name is not None
        decision = ApprovalDecision(
            approved=approved,
            approver=by.name,
            reason=reason,
            approval_id=approval_id,
            by=by,
        )
        try:
            answer = await decide_approval(self.client.temporal, workflow_id, decision)
        except ApprovalRefused as exc:
            raise Refused(409, str(exc)) from None
        return answer.model_dump(mode="json")

    async def cancel(self, who: Caller, workflow_id: str) -> dict[str, Any]:
        described = await self.runs.checked(who, workflow_id)
        if described.status is not WorkflowExecutionStatus.RUNNING:
            ended = described.status.name.lower() if described.status else "unknown"
            raise Refused(409, f"run {workflow_id!r} has ended ({ended})")
        await self.runs.handle(workflow_id).cancel()
        return view_json(await self.runs.view(workflow_id, described))
