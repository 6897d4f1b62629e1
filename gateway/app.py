"""The HTTP gateway: start, follow, cancel and approve runs without Temporal code.

A thin door onto `AgentWorkflow` through `AgentClient` (so it has the cache fast path and
coalescing): it holds no run state, and a restarted gateway loses nothing (its quotas live
in Redis, `quotas.py`). Browsers are refused before any route (`origin.py`). The contract
is in `schemas/gateway.py` and `GET /openapi.json`.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import datetime
from typing import Annotated, Any

import structlog
from fastapi import Depends, FastAPI, Header, Query, Request, Response
from fastapi.responses import JSONResponse
from sse_starlette import EventSourceResponse, ServerSentEvent
from temporalio.client import WorkflowExecutionStatus, WorkflowUpdateFailedError
from temporalio.service import RPCError

from agentkeel.client.agent_client import AgentClient
from agentkeel.client.approvals import NothingAwaiting, decide_approval
from agentkeel.gateway.audit import AuditReader, audit_query
from agentkeel.gateway.body_limit import BodyLimit
from agentkeel.gateway.events import run_events
from agentkeel.gateway.keys import ApiKeys, Caller, Refused
from agentkeel.gateway.mcp.http import mount_mcp
from agentkeel.gateway.origin import BrowserGuard
from agentkeel.gateway.quotas import Lease, OverQuota, QuotaLimits, Quotas
from agentkeel.gateway.run_poller import RunPollers
from agentkeel.gateway.runs import Runs
from agentkeel.schemas.approvals import ApprovalAnswer, ApprovalDecision
from agentkeel.schemas.effects import AuditEntry
from agentkeel.schemas.gateway import (
    GatewayApproval,
    Problem,
    QuotaProblem,
    RunState,
    RunView,
)
from agentkeel.schemas.request import AgentRequest
from agentkeel.settings.model import Settings

MAX_BODY_BYTES = 64 * 1024
"""A request is a question of at most 4000 characters and a few fields."""
DEFAULT_WAIT_S = 120.0
PROBLEMS: dict[int | str, dict[str, Any]] = {
    **{code: {"model": Problem} for code in (400, 401, 403, 404, 409, 413, 415, 421, 503)},
    429: {"model": QuotaProblem, "description": "a quota is full (see `Retry-After`)"},
}
log = structlog.get_logger(__name__)


def _caller(request: Request, authorization: Annotated[str | None, Header()] = None) -> Caller:
    keys: ApiKeys = request.app.state.keys
    return keys.caller(authorization)


CallerDep = Annotated[Caller, Depends(_caller)]
"""Who calls, from the `Authorization` header (module level: FastAPI resolves the
annotations of the routes by name)."""


def watches(request: AgentRequest) -> bool:
    """Whether the request asks for a watch (a run that may last days): by its options, or
    by a plan of its own with a repeated step."""
    if request.options.watch_every_s is not None:
        return True
    return request.plan is not None and any(s.repeat is not None for s in request.plan.steps)


def allowed_hosts(settings: Settings) -> list[str]:
    """The `Host` names a keyless gateway answers besides loopback: its bind address and
    `AGENTKEEL_GATEWAY_ALLOWED_HOSTS`."""
    bind = settings.gateway_address.strip().rpartition(":")[0].strip("[]")
    return [bind, *settings.gateway_allowed_hosts.split(",")]


def create_app(client: AgentClient, keys: ApiKeys, settings: Settings | None = None) -> FastAPI:
    """The gateway onto `client`'s deployment; `settings`: its `AGENTKEEL_GATEWAY_*` (and
    `task_queue`, which names the deployment in the quotas' Redis keys)."""
    settings = settings or Settings()
    runs = Runs(client)
    pollers = RunPollers(runs)
    ledger = AuditReader(settings.database_url)
    max_wait_s = float(settings.gateway_max_wait_s)
    quotas = None
    if client.redis is not None:
        limits = QuotaLimits.from_settings(settings)
        quotas = Quotas(client.redis, client.temporal, limits, settings.task_queue)
    else:
        log.warning("gateway_without_quotas", note="no Redis: quotas are not enforced")

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        sweeping = asyncio.create_task(quotas.sweeping()) if quotas is not None else None
        try:
            async with mcp_sessions():
                yield
        finally:
            if sweeping is not None:
                sweeping.cancel()
                await asyncio.gather(sweeping, return_exceptions=True)
            await ledger.close()
            await client.close()

    app = FastAPI(
        title="agentkeel gateway",
        version="1",
        summary="Start, follow, cancel and approve AgentWorkflow runs over HTTP.",
        lifespan=lifespan,
    )

    app.state.keys = keys
    # agentkeel's own tools for MCP clients, at `/mcp`, behind the same keys.
    mcp_sessions = mount_mcp(app, client, keys, max_wait_s=max_wait_s)

    @app.exception_handler(Refused)
    async def _refused(_: Request, exc: Refused) -> JSONResponse:
        headers = {"WWW-Authenticate": "Bearer"} if exc.status == 401 else None
        return JSONResponse({"detail": exc.detail}, status_code=exc.status, headers=headers)

    @app.exception_handler(OverQuota)
    async def _over_quota(_: Request, exc: OverQuota) -> JSONResponse:
        retry_after = {"Retry-After": str(exc.problem.retry_after_s)}
        return JSONResponse(
            exc.problem.model_dump(mode="json"), status_code=429, headers=retry_after
        )

    @app.exception_handler(RPCError)
    async def _temporal_down(_: Request, exc: RPCError) -> JSONResponse:
        return JSONResponse({"detail": f"Temporal: {exc.message}"}, status_code=503)

    app.add_middleware(BodyLimit, max_bytes=MAX_BODY_BYTES)
    # Added last, so it runs first: nothing a web page sent reaches a route or a body limit.
    app.add_middleware(BrowserGuard, keyed=keys.configured, hosts=allowed_hosts(settings))

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
        timeout_s: Annotated[float | None, Query(gt=0)] = None,
    ) -> RunView:
        """Start a run (`202`, with its ids), or with `wait=true` answer with its result
        (`200`; `202` if it is not done within `timeout_s`, at most
        `AGENTKEEL_GATEWAY_MAX_WAIT_S`). An answer in the cache's exact tier comes at once
        (`200`, `state: answered`), without a run. Past a quota of runs in flight, `429`."""
        if timeout_s is not None and timeout_s > max_wait_s:
            raise Refused(400, f"timeout_s: a request waits at most {max_wait_s:g} seconds")
        waited_s = timeout_s if timeout_s is not None else min(DEFAULT_WAIT_S, max_wait_s)
        admitted = who.admit(request)
        cached = await client.cached_answer(admitted)
        if cached is not None:
            response.status_code = 200
            answered = await client.resolve_outputs(cached)
            return RunView(workflow_id="", run_id="", state=RunState.ANSWERED, result=answered)
        lease = await reserve(who, admitted)
        try:
            handle = await client.start(admitted, coalesce=coalesce)
        except BaseException:
            await release(lease)
            raise
        if quotas is not None and lease is not None:
            lease = await quotas.started(lease, handle.id)
        run_id = handle.result_run_id or ""
        if not wait:
            return RunView(workflow_id=handle.id, run_id=run_id, state=RunState.RUNNING)
        try:
            async with asyncio.timeout(waited_s):
                result, _ = await runs.outcome(handle)
            await release(lease)  # ended: the slot is free now, not at the next sweep
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
        slot = None  # taken here, so a full quota is a 429 rather than a broken stream
        if quotas is not None:
            tenant = who.key.tenant if who.key else (await runs.owner(workflow_id))[0]
            slot = await quotas.open_stream(who.quota_id, tenant)

        async def events() -> AsyncIterator[ServerSentEvent]:
            if slot is not None:
                slot.begin()
            try:
                stream = run_events(runs, client.redis, workflow_id, last_event_id, pollers)
                async for event in stream:
                    yield ServerSentEvent(data=event.data, event=event.type.value, id=event.id)
            finally:
                if slot is not None:
                    await slot.close()

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
        by = who.approver(body.approver)
        await runs.checked(who, workflow_id)
        assert by.name is not None  # `approver` names everyone it lets decide
        decision = ApprovalDecision(
            approved=body.approved,
            approver=by.name,
            reason=body.reason,
            approval_id=body.approval_id,
            by=by,  # the workflow checks who this is: the role may approve, it did not ask
        )
        try:
            return await decide_approval(client.temporal, workflow_id, decision)
        except NothingAwaiting as exc:
            raise Refused(409, str(exc)) from None
        except WorkflowUpdateFailedError as exc:
            raise Refused(409, f"refused: {exc.cause}") from None

    @app.get("/v1/audit", response_model=list[AuditEntry], responses=PROBLEMS)
    async def list_audit(
        who: CallerDep,
        tenant: str | None = None,
        actor: str | None = None,
        target: str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        limit: int = 100,
    ) -> Any:
        """Side effects, refusals and approval decisions, newest first (the effects ledger)."""
        query = audit_query(
            who, tenant=tenant, actor=actor, target=target, since=since, until=until, limit=limit
        )
        return await ledger.entries(query)

    async def reserve(who: Caller, request: AgentRequest) -> Lease | None:
        if quotas is None:
            return None
        return await quotas.reserve_run(who.quota_id, request.tenant, watching=watches(request))

    async def release(lease: Lease | None) -> None:
        if quotas is not None and lease is not None:
            await quotas.release(lease)

    return app
