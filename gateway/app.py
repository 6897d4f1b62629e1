"""The HTTP gateway: start, follow, cancel and approve runs without Temporal code.

A thin door onto `AgentWorkflow` through `AgentClient` (so it has the cache fast path and
coalescing): it holds no run state, and a restarted gateway loses nothing (its quotas live
in Redis, `quotas.py`). Browsers are refused before any route (`origin.py`). The contract
is in `schemas/gateway.py` and `GET /openapi.json`. This module assembles the app: its
parts, lifespan, error answers (`problems.py`, RFC 9457), OpenAPI document (`openapi.py`)
and guards; the routes are `gateway.routes`'.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import structlog
from fastapi import FastAPI

from agentkeel.client.agent_client import AgentClient
from agentkeel.gateway.audit import AuditReader
from agentkeel.gateway.body_limit import BodyLimit
from agentkeel.gateway.keys import ApiKeys
from agentkeel.gateway.mcp.http import mount_mcp
from agentkeel.gateway.metrics import serve_metrics
from agentkeel.gateway.openapi import operation_id, serve_openapi
from agentkeel.gateway.origin import BrowserGuard
from agentkeel.gateway.problems import answer_problems
from agentkeel.gateway.quotas import deployment_quotas
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
OPENAPI_TAGS = [
    {"name": "runs", "description": "Start a run, read it, follow its events, cancel it."},
    {"name": "approvals", "description": "Decide on the side effect a run waits for."},
    {"name": "audit", "description": "Side effects, refusals and decisions (the ledger)."},
]
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
        docs_url=None,  # Swagger UI from the installed package instead (gateway/openapi.py)
        redoc_url=None,
        swagger_ui_oauth2_redirect_url=None,
        generate_unique_id_function=operation_id,
        openapi_tags=OPENAPI_TAGS,
    )

    app.state.keys = keys
    app.state.gateway = parts
    # agentkeel's own tools for MCP clients, at `/mcp`, behind the same keys.
    mcp_sessions = mount_mcp(app, client, keys, max_wait_s=parts.max_wait_s, quotas=parts.quotas)
    answer_problems(app)
    serve_openapi(app)
    app.add_middleware(BodyLimit, max_bytes=MAX_BODY_BYTES)
    serve_metrics(app)  # outside the body limit: its 413s are counted too
    # Added last, so it runs first: nothing a web page sent reaches a route or a body limit.
    app.add_middleware(BrowserGuard, keyed=keys.configured, hosts=allowed_hosts(settings))

    @app.get("/healthz", include_in_schema=False)
    async def healthz() -> dict[str, bool]:
        return {"ok": True}

    routers = ((run_routes, "runs"), (approval_routes, "approvals"), (audit_routes, "audit"))
    for routes, tag in routers:  # the OpenAPI document's order
        app.include_router(routes, tags=[tag])
    return app


def _parts(client: AgentClient, settings: Settings) -> GatewayParts:
    quotas = deployment_quotas(client, settings)
    runs = Runs(client)
    return GatewayParts(
        client=client,
        runs=runs,
        pollers=RunPollers(runs),
        ledger=AuditReader(settings.database_url),
        quotas=quotas,
        max_wait_s=float(settings.gateway_max_wait_s),
    )
