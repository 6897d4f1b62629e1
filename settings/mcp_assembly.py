"""The served domain with its MCP servers' tools: listed at start, then installed.

A domain's MCP servers (`Domain.mcp_servers`) and the deployment's
(`AGENTKEEL_MCP_SERVERS`) are connected and listed before the catalog is installed, so
their tools are catalog entries like any other from the first run on: plans are checked
against their schemas, prompts and the plan schema describe them, the catalog version
covers them, and the CPU worker serves them as activities (the connections stay open
for its life). A server that cannot be reached or listed at start is served as any worker
last listed it (kept in Redis: every worker holds one catalog), its calls failing as its
outage until it answers; one never listed, or a tool that cannot be served as listed, is
left out with its reason (`Domain.withdrawn_tools`): a plan naming one is refused saying
why, and the worker serves everything else.

A client needs none of them: its exact-tier fast path reads under the version the
workers publish (`activities.cache.served_version`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager

from agentkeel.activities.mcp.listings import ServerListings
from agentkeel.activities.mcp.source import McpToolSource, McpUnreachable
from agentkeel.schemas.tools.spec import ToolSpec
from agentkeel.schemas.tools.timers import WAIT
from agentkeel.sdk.decorator import ToolDefinitionError
from agentkeel.sdk.domain import Domain, DomainError
from agentkeel.sdk.loading import load_domain
from agentkeel.sdk.mcp import McpServer
from agentkeel.sdk.serving import install_domain
from agentkeel.settings.connections import redis_client
from agentkeel.settings.model import Settings, SettingsError, StartupError

__all__ = ["mcp_servers_of", "serve_domain_with_mcp"]


def mcp_servers_of(settings: Settings, domain: Domain | None = None) -> list[McpServer]:
    """The domain's MCP servers and the deployment's, in that order."""
    if domain is None:
        try:
            domain = load_domain(settings.domain)
        except DomainError as exc:
            raise SettingsError(str(exc)) from None
    return [*domain.mcp_servers, *settings.mcp_server_list()]


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
    servers = mcp_servers_of(settings, domain)
    if not servers:
        yield install_domain(domain)
        return
    # Each server's last good list, shared by the workers: one started while a server is
    # down still holds the catalog the others hold (`activities.mcp.listings`).
    redis = redis_client(settings.redis_url) if settings.redis_url else None
    scope = f"{settings.temporal_namespace}:{settings.task_queue}"
    listings = ServerListings(redis, scope) if redis is not None else None
    source = McpToolSource(servers, environ=environ, on_change=on_change, listings=listings)
    try:
        try:
            specs, downstreams = await source.start(
                taken={*(t.name for t in domain.tools), WAIT.name}
            )
        except McpUnreachable as exc:
            raise StartupError(str(exc)) from None
        except ToolDefinitionError as exc:
            raise SettingsError(str(exc)) from None
        try:
            served = dataclasses.replace(
                domain,
                tools=(*domain.tools, *specs),
                intents=joined_intents(domain, specs, source.intents),
                downstreams=(*domain.downstreams, *downstreams),
                mcp_servers=tuple(servers),
                withdrawn_tools=dict(source.withdrawn),
            )
            # Its patterns against the tools now listed (a withdrawn server's aside).
            served.check_patterns(pending=tuple(n.rstrip("*") for n in source.withdrawn))
        except DomainError as exc:
            raise SettingsError(str(exc)) from None
        yield install_domain(served)
    finally:
        await source.close()
        if redis is not None:
            await redis.aclose()


def joined_intents(
    domain: Domain, specs: Sequence[ToolSpec], configured: Mapping[str, Sequence[str]]
) -> Mapping[str, Sequence[str]]:
    """The domain's intents with the MCP tools the configuration puts in them.

    A domain that declares intents must declare every intent the configuration names (a
    misspelt one would silently allow nothing). One that declares none keeps each tool as
    an intent of its own name, and gets the configured ones beside them.

    Raises:
        SettingsError: the configuration names an intent the domain does not declare."""
    if not configured:
        return domain.intents
    if domain.intents:
        unknown = sorted(set(configured) - set(domain.intents))
        if unknown:
            raise SettingsError(
                f"MCP servers put tools in intents {unknown}, which domain {domain.name} does "
                f"not declare ({', '.join(domain.intents) or 'none'})"
            )
        base = {intent: list(tools) for intent, tools in domain.intents.items()}
    else:
        base = {s.name: [s.name] for s in (*domain.tools, *specs)}
    for intent, names in configured.items():
        joined = base.setdefault(intent, [])
        joined.extend(n for n in names if n not in joined)
    return {intent: tuple(tools) for intent, tools in base.items()}
