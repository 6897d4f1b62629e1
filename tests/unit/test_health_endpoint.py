"""A worker's health endpoint: live at once, ready only when told."""

from __future__ import annotations

import asyncio

from agentkeel.settings.ports import free_port
from agentkeel.workers.readiness import health_endpoint


async def test_the_health_endpoint_is_live_at_once_and_ready_only_when_told() -> None:
    address = f"127.0.0.1:{free_port()}"
    async with health_endpoint(address) as readiness:
        assert await _status(address, "/live") == 200
        assert await _status(address, "/ready") == 503, "loading: alive, not ready"
        readiness.ready = True
        assert await _status(address, "/ready") == 200
        assert await _status(address, "/other") == 404


async def _status(address: str, path: str) -> int:
    host, _, port = address.rpartition(":")
    reader, writer = await asyncio.open_connection(host, int(port))
    writer.write(f"GET {path} HTTP/1.0\r\n\r\n".encode())
    await writer.drain()
    line = await reader.readline()
    writer.close()
    return int(line.split()[1])
