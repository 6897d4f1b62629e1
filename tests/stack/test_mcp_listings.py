"""Every worker holds one catalog though an MCP server is down when one starts: the server's
last good list is kept in Redis (`activities.mcp.listings`). Real Redis and a real MCP
server (`mcp-server-time`, kept from starting until a file exists)."""

from __future__ import annotations

import asyncio
import sys
import uuid
from pathlib import Path

import pytest
import redis.asyncio as aioredis
from temporalio.exceptions import ApplicationError

from agentkeel.activities.mcp import source as source_module
from agentkeel.activities.mcp.listings import ServerListings
from agentkeel.activities.mcp.source import McpToolSource
from agentkeel.schemas.actor import Actor
from agentkeel.schemas.errors import MCP_TOOLS_CHANGING, MCP_UNAVAILABLE
from agentkeel.sdk.context import ToolContext
from agentkeel.sdk.mcp import McpServer
from tests.domains.mcp_domain import TOOLBOX


def _late_server(tmp_path: Path, ready: Path) -> Path:
    script = tmp_path / "late-server"
    server_bin = Path(sys.executable).parent / "mcp-server-time"
    script.write_text(f'#!/bin/sh\n[ -e "{ready}" ] || exit 1\nexec "{server_bin}"\n')
    script.chmod(0o755)
    return script


async def test_a_server_down_at_start_is_served_as_last_listed_until_it_answers(
    tmp_path: Path, redis_url: str
) -> None:
    ready = tmp_path / "ready"
    ready.touch()
    server = McpServer(
        name=f"clock{uuid.uuid4().hex[:6]}",
        command=str(_late_server(tmp_path, ready)),
        list_timeout_s=10,
    )
    redis = aioredis.from_url(redis_url)
    listings = ServerListings(redis)
    changed: list[str] = []
    first = McpToolSource([server], listings=listings)
    try:
        listed, _ = await first.start()
    finally:
        await first.close()
    assert listed and not first.withdrawn
    ready.unlink()  # the server is down when the next worker starts
    second = McpToolSource([server], listings=listings, on_change=changed.append, retry_s=0.2)
    try:
        served, _ = await second.start()
        # The same catalog entries as the worker that reached it (the same catalog version).
        assert [(s.name, s.activity_input_model.model_json_schema()) for s in served] == [
            (s.name, s.activity_input_model.model_json_schema()) for s in listed
        ]
        assert not second.withdrawn
        # A call meanwhile fails as the server's outage: retried, not refused.
        spec = served[0]
        assert spec.fn is not None
        context = ToolContext(actor=Actor(role="staff"), resources=None, tenant="t")
        arguments = spec.activity_input_model.model_construct()
        with pytest.raises(ApplicationError) as failed:
            await spec.fn(arguments, context)
        assert failed.value.type == MCP_UNAVAILABLE and not failed.value.non_retryable
        await asyncio.sleep(0.5)
        ready.touch()  # back, listing as before: nothing to restart for
        for _ in range(100):
            if not second._checks:  # (its return was seen)
                break
            await asyncio.sleep(0.1)
        assert not second._checks and changed == []
    finally:
        await second.close()
        await redis.delete(listings.key(server))
        await redis.aclose()


async def test_a_server_no_worker_ever_listed_is_withdrawn(tmp_path: Path, redis_url: str) -> None:
    server = McpServer(
        name=f"never{uuid.uuid4().hex[:6]}",
        command=str(_late_server(tmp_path, tmp_path / "never")),
        list_timeout_s=5,
    )
    redis = aioredis.from_url(redis_url)
    source = McpToolSource([server], listings=ServerListings(redis))
    try:
        served, _ = await source.start()
    finally:
        await source.close()
        await redis.aclose()
    assert served == [] and list(source.withdrawn) == [f"{server.name}_*"]


async def test_a_server_whose_list_keeps_changing_is_refused_not_restarted_for(
    tmp_path: Path, redis_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past `FLAP_LIMIT` changes in the window (0 here: the first), the worker does not
    restart for the toolbox (which would stop every other tool with it): its tools are
    refused with `McpToolsChanging` until it keeps one list for the settling time, then the
    worker restarts onto that list. Real toolbox server, real Redis."""
    monkeypatch.setattr(source_module, "FLAP_LIMIT", 0)
    toolbox = McpServer(
        name=f"tb{uuid.uuid4().hex[:6]}",
        command=sys.executable,
        args=(str(TOOLBOX),),
        env={"TOOLBOX_STATE": str(tmp_path)},
    )
    redis = aioredis.from_url(redis_url)
    listings = ServerListings(redis, scope=uuid.uuid4().hex)
    changed: list[str] = []
    source = McpToolSource([toolbox], listings=listings, on_change=changed.append, settle_s=1.0)
    context = ToolContext(actor=Actor(role="staff"), resources=None, tenant="t")
    try:
        specs = {s.name.removeprefix(toolbox.tool_prefix): s for s in (await source.start())[0]}
        grow, lookup = specs["grow"], specs["lookup"]
        assert grow.fn is not None and lookup.fn is not None
        await grow.fn(grow.activity_input_model.model_construct(), context)
        [connection] = source.connections
        for _ in range(100):
            if connection.unsettled is not None:
                break
            await asyncio.sleep(0.05)
        assert connection.unsettled is not None and changed == [], "refused, not restarted"
        asked = lookup.activity_input_model.model_construct(key="k")
        with pytest.raises(ApplicationError) as refused:
            await lookup.fn(asked, context)
        assert refused.value.type == MCP_TOOLS_CHANGING and not refused.value.non_retryable
        assert refused.value.next_retry_delay is not None  # tried again later, never sent
        assert "changed its tool list" in str(refused.value)
        for _ in range(100):  # it keeps the grown list: settled, the worker restarts onto it
            if changed:
                break
            await asyncio.sleep(0.1)
        assert changed == [toolbox.name] and connection.unsettled is None
    finally:
        await source.close()
        await redis.aclose()


async def test_a_change_is_counted_once_however_many_processes_see_it(redis_url: str) -> None:
    """Every worker (and gateway) connected to a server hears its change: the deployment
    counts the change to a given list once, so it takes that many real changes to flap."""
    redis = aioredis.from_url(redis_url)
    server = McpServer(name=f"counted{uuid.uuid4().hex[:6]}", command="x")
    workers = [ServerListings(redis, scope="ns:q") for _ in range(3)]
    try:
        assert [await w.count_change(server, "list B") for w in workers] == [1, 1, 1]
        assert await workers[0].count_change(server, "list C") == 2
        assert await workers[1].count_change(server, "list C") == 2
    finally:
        keys = [k async for k in redis.scan_iter(f"agentkeel:mcp:changes:{server.name}:*")]
        await redis.delete(*keys)
        await redis.aclose()
