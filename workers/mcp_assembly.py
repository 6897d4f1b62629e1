"""The served domain with its MCP servers' tools: listed at start, then installed.

A domain's MCP servers (`Domain.mcp_servers`) and the deployment's
(`AGENTKEEL_MCP_SERVERS`) are connected and listed before the catalog is installed, so
their tools are catalog entries like any other from the first run on: plans are checked
against their schemas, prompts and the plan schema describe them, the catalog version
covers them, and the CPU worker serves them as activities (the connections stay open
for its life). A server that cannot be reached at start stops the process with its name:
a worker never serves half a catalog.
"""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager

from agentkeel.activities.mcp.source import McpToolSource, McpUnreachable
from agentkeel.schemas.domain import Domain, DomainError
from agentkeel.schemas.domain_loading import load_domain
from agentkeel.schemas.tools.catalog import install_domain
from agentkeel.schemas.tools.decorator import ToolDefinitionError
from agentkeel.workers.settings import Settings, SettingsError, StartupError

__all__ = ["serve_domain_with_mcp"]


@asynccontextmanager
async def serve_domain_with_mcp(
    settings: Settings,
    *,
    environ: Mapping[str, str] | None = None,
    on_change: Callable[[str], None] | None = None,
) -> AsyncIterator[Domain]:
    """Load the domain, list its and the deployment's MCP servers' tools, install the
    whole as this process's catalog, and keep the servers' connections open until exit.

    `on_change`: called with a server's name when its tool list changed while running."""
    try:
        domain = load_domain(settings.domain)
    except DomainError as exc:
        raise SettingsError(str(exc)) from None
    servers = [*domain.mcp_servers, *settings.mcp_server_list()]
    if not servers:
        yield install_domain(domain)
        return
    source = McpToolSource(servers, environ=environ, on_change=on_change)
    try:
        try:
            specs, downstreams = await source.start()
        except McpUnreachable as exc:
            raise StartupError(str(exc)) from None
        except ToolDefinitionError as exc:
            raise SettingsError(str(exc)) from None
        try:
            served = dataclasses.replace(
                domain,
                tools=(*domain.tools, *specs),
                downstreams=(*domain.downstreams, *downstreams),
                mcp_servers=tuple(servers),
            )
        except DomainError as exc:
            raise SettingsError(str(exc)) from None
        yield install_domain(served)
    finally:
        await source.close()
