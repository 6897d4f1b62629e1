"""The tool activities' fixtures: a seeded database per module, the real carrier service on a
free port (per module, in place of the session's), and running an activity outside a
worker."""

from __future__ import annotations

import asyncio
import typing
from collections.abc import AsyncIterator

import httpx
import pytest
from temporalio.testing import ActivityEnvironment

from agentkeel.examples.shop.carrier import serve
from agentkeel.settings.ports import free_port
from tests.support.pg import fresh_database


@pytest.fixture(scope="module")
async def seeded_dsn(admin_dsn: str) -> AsyncIterator[str]:
    async with fresh_database(admin_dsn) as dsn:
        yield dsn


@pytest.fixture(scope="module")
async def carrier_url() -> AsyncIterator[str]:
    """The real carrier service, on a free port, through `serve`."""
    port = free_port()
    server = asyncio.create_task(serve("127.0.0.1", port, latency_ms=5))
    url = f"http://127.0.0.1:{port}"
    try:
        async with httpx.AsyncClient() as client:
            for _ in range(100):
                try:
                    if (await client.get(f"{url}/healthz")).status_code == 200:
                        break
                except httpx.TransportError:
                    pass  # not listening yet
                await asyncio.sleep(0.02)
            else:
                raise RuntimeError("carrier service did not start")
        yield url
    finally:
        server.cancel()
        with pytest.raises(asyncio.CancelledError):
            await server


@pytest.fixture(scope="module")
async def http() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(timeout=5) as client:
        yield client


def run(fn: typing.Any, arg: typing.Any) -> typing.Any:
    return ActivityEnvironment().run(fn, arg)
