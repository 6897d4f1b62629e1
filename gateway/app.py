"""The HTTP gateway: start, follow, cancel and approve runs without Temporal code.

A thin door onto `AgentWorkflow` through `AgentClient` (so it has the cache fast path and
coalescing): it holds no run state, and a restarted gateway loses nothing (its quotas live
in Redis, `quotas.py`). Browsers are refused before any route (`origin.py`). The contract
is in `schemas/gateway.py` and `GET /openapi.json`. This module assembles the app: its
parts, lifespan, error answers and guards; the routes are `gateway.routes`'.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import structlog
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from temporalio.service import RPCError

from agentkeel.client.agent_client import AgentClient
from agentkeel.gateway.audit import AuditReader
from agentkeel.gateway.body_limit import BodyLimit
from agentkeel.gateway.keys import ApiKeys, Refused
from agentkeel.gateway.mcp.http import mount_mcp
from agentkeel.gateway.origin import BrowserGuard
from agentkeel.gateway.quotas import OverQuota, QuotaLimits, Quotas
from agentkeel.gateway.routes.approvals import router as approval_routes
from agentkeel.gateway.routes.audit import router as audit_routes
from agentkeel.gateway.routes.dependencies import GatewayParts, watches
from agentkeel.gateway.routes.runs import router as run_routes
from agentkeel.gateway.run_poller import RunPollers
from agentkeel.gateway.runs import Runs
from agentkeel.settings.model import Settings

__all__ = ["MAX_BODY_BYTES", "allowed_hosts", "create_app", "watches"]

MAX_BODY_BYTES = 64 * 1024
"""A request is a question of at most 4000 characters and a few fields."""
log = structlog.get_logger(__name__)


def allowed_hosts(settings: Settings) -> list[str]:
    """The `Host` names a keyless gateway answers besides loopback: its bind address and
    `AGENTKEEL_GATEWAY_ALLOWED_HOSTS`."""
    bind = settings.gateway_address.strip().rpartition(":")[0].strip("[]")
    return [bind, *settings.gateway_allowed_hosts.split(",")]


def create_app(client: AgentClient, keys: ApiKeys, settings: Settings | None = None) -> FastAPI:
    """The gateway onto `client`'s deployment; `settings`: its `AGENTKEEL_GATEWAY_*` (and
    `task_queue`, which names the deployment in the quotas' Redis keys)."""
    settings = settings or Settings()
    parts = _parts(client, settings)

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        quotas = parts.quotas
        sweeping = asyncio.create_task(quotas.sweeping()) if quotas is not None else None
        try:
            async with mcp_sessions():
                yield
        finally:
            if sweeping is not None:
                sweeping.cancel()
                await asyncio.gather(sweeping, return_exceptions=True)
            await parts.ledger.close()
            await client.close()

    app = FastAPI(
        title="agentkeel gateway",
        version="1",
        summary="Start, follow, cancel and approve AgentWorkflow runs over HTTP.",
        lifespan=lifespan,
    )

    app.state.keys = keys
    app.state.gateway = parts
    # agentkeel's own tools for MCP clients, at `/mcp`, behind the same keys.
    mcp_sessions = mount_mcp(app, client, keys, max_wait_s=parts.max_wait_s, quotas=parts.quotas)
    _answer_problems(app)
    app.add_middleware(BodyLimit, max_bytes=MAX_BODY_BYTES)
    # Added last, so it runs first: nothing a web page sent reaches a route or a body limit.
    app.add_middleware(BrowserGuard, keyed=keys.configured, hosts=allowed_hosts(settings))

    @app.get("/healthz", include_in_schema=False)
    async def healthz() -> dict[str, bool]:
        return {"ok": True}

    for routes in (run_routes, approval_routes, audit_routes):  # the OpenAPI document's order
        app.include_router(routes)
    return app


def _parts(client: AgentClient, settings: Settings) -> GatewayParts:
    quotas = None
    if client.redis is not None:
        limits = QuotaLimits.from_settings(settings)
        quotas = Quotas(client.redis, client.temporal, limits, settings.task_queue)
    else:
        log.warning("gateway_without_quotas", note="no Redis: quotas are not enforced")
    runs = Runs(client)
    return GatewayParts(
        client=client,
        runs=runs,
        pollers=RunPollers(runs),
        ledger=AuditReader(settings.database_url),
        quotas=quotas,
        max_wait_s=float(settings.gateway_max_wait_s),
    )


def _answer_problems(app: FastAPI) -> None:
    """How a refusal, a full quota and an unreachable Temporal answer, whatever the route."""

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
