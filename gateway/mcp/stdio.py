"""`agentkeel mcp`: agentkeel's MCP tools over stdio, for a desktop MCP client.

The client starts this command itself; it talks MCP on stdin/stdout (logs go to stderr).
Who calls: with the gateway's API keys configured (`AGENTKEEL_API_KEYS_FILE`), the key
`AGENTKEEL_MCP_API_KEY` names (its tenant and actor bind every call, as on the gateway);
without keys, the local user, whose calls act as they say, as a loopback gateway's do.
"""

from __future__ import annotations

import asyncio

from mcp.server.mcpserver import Context

from agentkeel.client.agent_client import AgentClient
from agentkeel.gateway.keys import ApiKeys, Caller, Refused
from agentkeel.gateway.mcp.operations import Operations
from agentkeel.gateway.mcp.tools import build_mcp_server
from agentkeel.gateway.quotas import deployment_quotas
from agentkeel.settings.mcp_assembly import serve_domain_with_mcp
from agentkeel.settings.model import ENV_PREFIX, Settings, StartupError

__all__ = ["serve_stdio"]


def stdio_caller(settings: Settings) -> Caller:
    """The one caller of this process, decided at start."""
    keys = ApiKeys.load(settings.api_keys_file)
    if not keys.configured:
        return Caller(None)
    if not settings.mcp_api_key:
        raise StartupError(
            f"API keys are configured: set {ENV_PREFIX}MCP_API_KEY to the key `agentkeel mcp` "
            "acts with"
        )
    try:
        return keys.caller(f"Bearer {settings.mcp_api_key}")
    except Refused as exc:
        raise StartupError(f"{ENV_PREFIX}MCP_API_KEY: {exc.detail}") from None


async def serve_stdio(settings: Settings) -> None:
    # The workers' catalog (with their MCP servers' tools), installed before the key is
    # checked against its roles: its version keys the cache fast path.
    async with serve_domain_with_mcp(settings):
        await _serve(settings, stdio_caller(settings))


async def _serve(settings: Settings, caller: Caller) -> None:
    client = await AgentClient.connect(settings)

    def caller_of(_: Context) -> Caller:
        return caller

    # The same quotas as the HTTP gateway's doors, in the same Redis: no side door.
    quotas = deployment_quotas(client, settings)
    operations = Operations(client, max_wait_s=float(settings.gateway_max_wait_s), quotas=quotas)
    server = build_mcp_server(operations, caller_of)
    sweeping = asyncio.create_task(quotas.sweeping(publish=False)) if quotas is not None else None
    try:
        await server.run_stdio_async()
    finally:
        if sweeping is not None:
            sweeping.cancel()
            await asyncio.gather(sweeping, return_exceptions=True)
        await client.close()
