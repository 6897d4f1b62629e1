"""The local stack: embedded Postgres and Redis, a Temporal dev server and the carrier service."""

from __future__ import annotations

import importlib.util
import socket
from pathlib import Path

import asyncpg
import httpx
import pytest
import redis.asyncio as aioredis
from temporalio.api.operatorservice.v1 import ListSearchAttributesRequest
from temporalio.client import Client

from agentkeel.cli.stack.local import embedded_settings
from agentkeel.cli.stack.pids import pid_alive
from agentkeel.cli.stack.supervisor import LocalStack, describe, read_endpoints
from agentkeel.settings.model import Settings
from agentkeel.settings.ports import PortTaken

_NEEDED = (
    "agentkeel.activities.database.migrate",
    "agentkeel.examples.shop.seed",
    "agentkeel.examples.shop.carrier",
)
_MISSING = [name for name in _NEEDED if importlib.util.find_spec(name) is None]

pytestmark = pytest.mark.skipif(
    bool(_MISSING), reason=f"not written yet: {', '.join(_MISSING)} (the stack applies/starts them)"
)


@pytest.fixture
def settings(stack_dir: Path) -> Settings:
    return embedded_settings(stack_dir)


async def test_local_stack_starts_every_service_and_stops_them(settings: Settings) -> None:
    stack = LocalStack(settings, start_workers=False)
    endpoints = await stack.start()
    try:
        assert read_endpoints(settings) == endpoints
        conn = await asyncpg.connect(endpoints.database_url)
        try:
            assert await conn.fetchval("SELECT count(*) FROM customers") > 0
        finally:
            await conn.close()

        client = aioredis.from_url(endpoints.redis_url)
        try:
            assert await client.ping()
        finally:
            await client.aclose()

        async with httpx.AsyncClient() as http:
            assert (
                await http.get(f"{endpoints.services['AGENTKEEL_SHOP_CARRIER_URL']}/healthz")
            ).status_code == 200
            assert endpoints.ui_url is not None
            assert (await http.get(endpoints.ui_url)).status_code == 200

        temporal = await Client.connect(endpoints.temporal_address)
        attrs = await temporal.operator_service.list_search_attributes(
            ListSearchAttributesRequest(namespace="default")
        )
        assert {"AgentIntent", "AgentTier", "AgentCache", "AgentWaiting"} <= set(
            attrs.custom_attributes
        )
        # The server's SQLite journal is write-ahead (`SQLITE_PRAGMAS`): a -wal file beside it.
        assert (settings.state_dir / "temporal.db-wal").exists()
    finally:
        await stack.stop()

    children = {name: pid for name, pid in endpoints.pids.items() if name != "supervisor"}
    assert set(children) == {"temporal", "redis", "carrier"}
    assert [name for name, pid in children.items() if pid_alive(pid)] == []
    assert not (settings.state_dir / "pg" / "postmaster.pid").exists()
    assert not (settings.state_dir / "stack.pid").exists()
    assert read_endpoints(settings) is None
    assert (settings.state_dir / "temporal.db").exists()  # runs survive a restart of `up`


@pytest.mark.parametrize(
    ("field", "role"),
    [("temporal_ui_port", "Temporal Web UI")],
)
async def test_port_in_use_is_named_and_nothing_is_started(
    settings: Settings, field: str, role: str
) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        stack = LocalStack(settings.model_copy(update={field: port}), start_workers=False)
        with pytest.raises(PortTaken, match=rf"port {port} \({role}\) is already in use"):
            await stack.start()
    assert not (settings.state_dir / "stack.pid").exists()
    assert not (settings.state_dir / "logs").exists()  # ports are checked before any start


async def test_a_temporal_it_was_not_told_about_is_never_joined(settings: Settings) -> None:
    """Another team's server on the default address (a plain listener stands in): `up`
    starts its own on a free port and says so, where it used to join it without a word."""
    with socket.socket() as other:
        other.bind(("127.0.0.1", 0))
        other.listen()
        taken = f"127.0.0.1:{other.getsockname()[1]}"
        untold = settings.model_copy(update={"temporal_address": taken})
        untold.__pydantic_fields_set__.discard("temporal_address")  # as the default is
        async with LocalStack(untold, start_workers=False) as endpoints:
            assert endpoints.temporal_address != taken
            assert endpoints.ui_url is not None  # its own dev server, started here
            client = await Client.connect(endpoints.temporal_address)
            assert (await client.count_workflows()).count == 0
            assert endpoints.notes == [
                f"Temporal: {taken} already answers, a server this stack did not start "
                "(agentkeel up joins only one it is told about), so it starts its own at "
                f"{endpoints.temporal_address}; AGENTKEEL_TEMPORAL_ADDRESS names the one to use"
            ]
            assert describe(endpoints).startswith(f"  note: {endpoints.notes[0]}\n")
            assert f"{endpoints.temporal_address}  (started here)" in describe(endpoints)
