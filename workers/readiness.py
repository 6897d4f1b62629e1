"""A worker's health endpoint: `/ready` answers 200 only once it can serve, `/live` always.

The metrics port is no readiness signal: the inference worker opens it before its models
load, and the CPU worker before its caches (the semantic index) are built. This endpoint
turns ready once the worker polls its task queues with everything loaded, and unready
again as soon as SIGTERM starts the drain (activities in flight finish within the graceful
shutdown timeout, `workers.worker.GRACEFUL_SHUTDOWN`), so a rollout waits for it and an
orchestrator's probe (Kubernetes, compose) means "ready to serve". Served at
`AGENTKEEL_HEALTH_ADDRESS`; plain HTTP/1.0 on asyncio streams: no web framework in a worker.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import structlog

from agentkeel.settings.model import StartupError

log = structlog.get_logger(__name__)


class Readiness:
    def __init__(self) -> None:
        self.ready = False

    async def _answer(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            line = await asyncio.wait_for(reader.readline(), 2)
            path = line.split()[1].decode() if len(line.split()) > 1 else ""
            if path == "/live":
                status, body = "200 OK", "live"
            elif path == "/ready" and self.ready:
                status, body = "200 OK", "ready"
            elif path == "/ready":
                status, body = "503 Unavailable", "not ready"
            else:
                status, body = "404 Not Found", "try /ready or /live"
            writer.write(
                f"HTTP/1.0 {status}\r\ncontent-type: text/plain\r\ncontent-length: "
                f"{len(body)}\r\n\r\n{body}".encode()
            )
            await writer.drain()
        except (TimeoutError, OSError):
            pass
        finally:
            writer.close()


@asynccontextmanager
async def health_endpoint(address: str) -> AsyncIterator[Readiness]:
    """Serve `/ready` and `/live` at `host:port` (empty or `off`: serve nothing)."""
    readiness = Readiness()
    if address.strip() in ("", "off"):
        yield readiness
        return
    host, _, port = address.rpartition(":")
    try:
        server = await asyncio.start_server(readiness._answer, host or "0.0.0.0", int(port))
    except OSError as exc:
        raise StartupError(f"AGENTKEEL_HEALTH_ADDRESS {address}: {exc}") from None
    log.info("health_served", ready_url=f"http://{address}/ready")
    try:
        yield readiness
    finally:
        server.close()
        await server.wait_closed()
