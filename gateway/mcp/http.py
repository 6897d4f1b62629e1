"""agentkeel's MCP server on the gateway: streamable HTTP at `/mcp`.

Authenticated like every route of the gateway: the `Authorization: Bearer <API key>`
header names the caller (a missing or unknown key is a `401` before any MCP message is
read), and the key's tenant and actor bind every tool call. Without keys (a loopback
gateway) calls act as they say, as the gateway's own routes do. Browsers are refused by
the gateway's guard before this is reached; the SDK's own DNS-rebinding check is
therefore off here.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from typing import Any

from fastapi import FastAPI
from mcp.server.mcpserver import Context
from mcp.server.transport_security import TransportSecuritySettings
from starlette.requests import Request
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from agentkeel.client.agent_client import AgentClient
from agentkeel.gateway.keys import ApiKeys, Caller, Refused
from agentkeel.gateway.mcp.operations import Operations
from agentkeel.gateway.mcp.tools import build_mcp_server
from agentkeel.gateway.problems import refused_response
from agentkeel.gateway.quotas import Quotas

__all__ = ["MCP_PATH", "mount_mcp"]

MCP_PATH = "/mcp"


class _KeyChecked:
    """Refuse a request whose bearer key is missing or unknown, before MCP reads it."""

    def __init__(self, app: ASGIApp, keys: ApiKeys) -> None:
        self._app, self._keys = app, keys

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            self._keys.caller(Request(scope).headers.get("authorization"))
        except Refused as exc:  # as problem details, like every other route's refusal
            await refused_response(exc)(scope, receive, send)
            return
        await self._app(scope, receive, send)


def mount_mcp(
    app: FastAPI,
    client: AgentClient,
    keys: ApiKeys,
    *,
    max_wait_s: float,
    quotas: Quotas | None = None,
) -> Callable[[], AbstractAsyncContextManager[Any]]:
    """Serve agentkeel's MCP tools at `/mcp` of `app`; returns what the app's lifespan
    must run (the MCP sessions' manager)."""

    def caller_of(ctx: Context) -> Caller:
        request = ctx.request_context.request
        headers = getattr(request, "headers", None)
        return keys.caller(headers.get("authorization") if headers is not None else None)

    # The same quotas as the HTTP routes: `/mcp` is no side door.
    operations = Operations(client, max_wait_s=max_wait_s, quotas=quotas)
    server = build_mcp_server(operations, caller_of)
    starlette = server.streamable_http_app(
        streamable_http_path=MCP_PATH,
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
    )
    [route] = [r for r in starlette.routes if isinstance(r, Route) and r.path == MCP_PATH]
    app.router.routes.append(
        Route(MCP_PATH, endpoint=_KeyChecked(route.app, keys), methods=["GET", "POST", "DELETE"])
    )
    return server.session_manager.run
