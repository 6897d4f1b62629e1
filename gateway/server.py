"""Serving the gateway: `agentkeel gateway`, and one process of `agentkeel up`."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import structlog
import uvicorn
from fastapi import FastAPI

from agentkeel.client.agent_client import AgentClient
from agentkeel.gateway.app import create_app
from agentkeel.gateway.keys import ApiKeys
from agentkeel.gateway.origin import is_loopback
from agentkeel.settings.mcp_assembly import serve_domain_with_mcp
from agentkeel.settings.model import ENV_PREFIX, Settings, StartupError
from agentkeel.settings.ports import ensure_port_free

log = structlog.get_logger(__name__)


def gateway_host_port(settings: Settings) -> tuple[str, int]:
    host, _, port = settings.gateway_address.strip().rpartition(":")
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise StartupError(
            f"{ENV_PREFIX}GATEWAY_ADDRESS must be host:port, got {settings.gateway_address!r}"
        )
    return host.strip("[]"), int(port)


def checked_keys(settings: Settings, host: str) -> ApiKeys:
    """The API keys; without any, only a loopback address may be served."""
    keys = ApiKeys.load(settings.api_keys_file)
    if not keys.configured and not is_loopback(host):
        raise StartupError(
            f"the gateway has no API keys, so it serves only 127.0.0.1, not {host}: set "
            f"{ENV_PREFIX}API_KEYS_FILE (see gateway/keys.py) to serve other hosts"
        )
    return keys


@asynccontextmanager
async def serving(app: FastAPI, host: str, port: int) -> AsyncIterator[str]:
    """`app` served by uvicorn in this event loop (tests and benchmarks); yields its URL."""
    config = uvicorn.Config(app, host=host, port=port, log_config=None, lifespan="on")
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve())
    while not server.started:
        if task.done():
            task.result()
            raise StartupError(f"the gateway did not start on {host}:{port}")
        await asyncio.sleep(0.02)
    try:
        yield f"http://{host}:{port}"
    finally:
        server.should_exit = True
        await task


async def serve_gateway(settings: Settings) -> None:
    host, port = gateway_host_port(settings)
    # The catalog the workers serve (their MCP servers' tools too), installed before the
    # keys are checked against its roles: its version keys the cache fast path, so the
    # gateway's must be the workers'.
    async with serve_domain_with_mcp(settings):
        keys = checked_keys(settings, host)
        if not keys.configured:
            log.warning(
                "gateway_without_api_keys",
                note="no API keys: serving loopback only; requests act as their body says",
            )
        ensure_port_free(host, port, "gateway", "AGENTKEEL_GATEWAY_ADDRESS")
        await _serve(settings, host, port, keys)


async def _serve(settings: Settings, host: str, port: int, keys: ApiKeys) -> None:
    client = await AgentClient.connect(settings)
    app = create_app(client, keys, settings)
    config = uvicorn.Config(
        app, host=host, port=port, log_config=None, access_log=False, lifespan="on"
    )
    log.info("gateway_serving", address=f"http://{host}:{port}", api_keys=keys.configured)
    await uvicorn.Server(config).serve()
