"""The HTTP gateway: start, follow, cancel and approve runs without Temporal code.

A thin door onto `AgentWorkflow` through `AgentClient` (so it has the cache fast path and
coalescing): it holds no run state, and a restarted gateway loses nothing. The contract is
in `schemas/gateway.py` and `GET /openapi.json`.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Annotated, Any

from fastapi import Depends, FastAPI, Header, Query, Request, Response
from fastapi.responses import JSONResponse
from sse_starlette import EventSourceResponse, ServerSentEvent
from temporalio.client import WorkflowExecutionStatus, WorkflowUpdateFailedError
from temporalio.service import RPCError

from agentkeel.schemas.approvals import ApprovalAnswer, ApprovalDecision
from agentkeel.schemas.gateway import GatewayApproval, Problem, RunState, RunView
from agentkeel.schemas.request import AgentRequest
from agentkeel.workers.client.agent_client import AgentClient
from agentkeel.workers.client.approvals import NothingAwaiting, decide_approval
from agentkeel.workers.gateway.body_limit import BodyLimit
from agentkeel.workers.gateway.events import run_events
from agentkeel.workers.gateway.keys import ApiKeys, Caller, Refused
from agentkeel.workers.gateway.runs import Runs

MAX_BODY_BYTES = 64 * 1024
"""A request is a question of at most 4000 characters and a few fields."""
DEFAULT_WAIT_S = 120.0
PROBLEMS: dict[int | str, dict[str, Any]] = {
    code: {"model": Problem} for code in (401, 403, 404, 409, 413, 503)
}


def _caller(request: Request, authorization: Annotated[str | None, Header()] = None) -> Caller:
    keys: ApiKeys = request.app.state.keys
    return keys.caller(authorization)


CallerDep = Annotated[Caller, Depends(_caller)]
"""Who calls, from the `Authorization` header (module level: FastAPI resolves the
annotations of the routes by name)."""


def create_app(client: AgentClient, keys: ApiKeys) -> FastAPI:
    runs = Runs(client)

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        try:
            yield
        finally:
            await client.close()

    app = FastAPI(
        title="agentkeel gateway",
        version="1",
        summary="Start, follow, cancel and approve AgentWorkflow runs over HTTP.",
        lifespan=lifespan,
    )

    app.state.keys = keys

    @app.exception_handler(Refused)
    async def _refused(_: Request, exc: Refused) -> JSONResponse:
        headers = {"WWW-Authenticate": "Bearer"} if exc.status == 401 else None
        return JSONResponse({"detail": exc.detail}, status_code=exc.status, headers=headers)

    @app.exception_handler(RPCError)
    async def _temporal_down(_: Request, exc: RPCError) -> JSONResponse:
        return JSONResponse({"detail": f"Temporal: {exc.message}"}, status_code=503)

    app.add_middleware(BodyLimit, max_bytes=MAX_BODY_BYTES)

    @app.get("/healthz", include_in_schema=False)
    async def healthz() -> dict[str, bool]:
        return {"ok": True}

    @app.post(
        "/v1/runs",
        response_model=RunView,
        status_code=202,
        responses={200: {"model": RunView, "description": "answered"}, **PROBLEMS},
    )
    async def start_run(
        request: AgentRequest,
        who: CallerDep,
        response: Response,
        wait: Annotated[bool, Query(description="answer with the result")] = False,
        coalesce: Annotated[bool, Query(description="share a run with equal requests")] = True,
        timeout_s: Annotated[float, Query(gt=0, le=3600)] = DEFAULT_WAIT_S,
    ) -> RunView:
        """Start a run (`202`, with its ids), or with `wait=true` answer with its result
        (`200`; `202` if it is not done within `timeout_s`). An answer in the cache's exact
        tier comes at once (`200`, `state: answered`), without a run."""
        admitted = who.admit(request)
        cached = await client.cached_answer(admitted)
        if cached is not None:
            response.status_code = 200
            answered = await client.resolve_outputs(cached)
            return RunView(workflow_id="", run_id="", state=RunState.ANSWERED, result=answered)
        handle = await client.start(admitted, coalesce=coalesce)
        run_id = handle.result_run_id or ""
        if not wait:
            return RunView(workflow_id=handle.id, run_id=run_id, state=RunState.RUNNING)
        try:
            async with asyncio.timeout(timeout_s):
                result, _ = await runs.outcome(handle)
        except TimeoutError:
            progress = await runs.progress(handle.id)
            return RunView(
                workflow_id=handle.id, run_id=run_id, state=RunState.RUNNING, progress=progress
            )
        response.status_code = 200
        if result is not None:
            return RunView(
                workflow_id=handle.id, run_id=run_id, state=RunState.COMPLETED, result=result
            )
        return await runs.view(handle.id, await runs.checked(who, handle.id))

    @app.get("/v1/runs/{workflow_id}", response_model=RunView, responses=PROBLEMS)
    async def get_run(workflow_id: str, who: CallerDep) -> RunView:
        """The run's state; its progress while running; its result once completed."""
        return await runs.view(workflow_id, await runs.checked(who, workflow_id))

    @app.get(
        "/v1/runs/{workflow_id}/events",
        responses={200: {"content": {"text/event-stream": {}}}, **PROBLEMS},
    )
    async def run_event_stream(
        workflow_id: str,
        who: CallerDep,
        last_event_id: Annotated[str | None, Header()] = None,
    ) -> EventSourceResponse:
        """Server-Sent Events: `progress`, `token`, `reset`, then `result` or `error`.
        Resumable: send back the last event's id as `Last-Event-ID`."""
        await runs.checked(who, workflow_id)

        async def events() -> AsyncIterator[ServerSentEvent]:
            async for event in run_events(runs, client.redis, workflow_id, last_event_id):
                yield ServerSentEvent(data=event.data, event=event.type.value, id=event.id)

        return EventSourceResponse(events(), ping=15, headers={"X-Accel-Buffering": "no"})

    @app.post(
        "/v1/runs/{workflow_id}/cancel", status_code=202, response_model=RunView,
        responses=PROBLEMS,
    )  # fmt: skip
    async def cancel_run(workflow_id: str, who: CallerDep) -> RunView:
        """Ask the run to cancel (it stops its tools and ends `canceled`); `409` if it has
        already ended."""
        described = await runs.checked(who, workflow_id)
        status = described.status
        if status is not WorkflowExecutionStatus.RUNNING:
            ended = status.name.lower() if status else "unknown"
            raise Refused(409, f"run {workflow_id!r} has ended ({ended})")
        await runs.handle(workflow_id).cancel()
        return await runs.view(workflow_id, described)

    @app.post("/v1/runs/{workflow_id}/approve", response_model=ApprovalAnswer, responses=PROBLEMS)
    async def approve_run(workflow_id: str, body: GatewayApproval, who: CallerDep) -> Any:
        """Approve or reject the side effect the run waits for (`progress.awaiting`)."""
        approver = who.approver(body.approver)
        await runs.checked(who, workflow_id)
        decision = ApprovalDecision(
            approved=body.approved,
            approver=approver,
            reason=body.reason,
            approval_id=body.approval_id,
        )
        try:
            return await decide_approval(client.temporal, workflow_id, decision)
        except NothingAwaiting as exc:
            raise Refused(409, str(exc)) from None
        except WorkflowUpdateFailedError as exc:
            raise Refused(409, f"refused: {exc.cause}") from None

    return app
