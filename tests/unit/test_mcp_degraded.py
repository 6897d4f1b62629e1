"""A misbehaving MCP server degrades its own tools only (no server runs: its command does not
exist, and one tool of a listing cannot be served)."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import mcp.types as types

from agentkeel.activities.mcp.connection import McpConnection
from agentkeel.activities.mcp.source import McpToolSource
from agentkeel.activities.mcp.specs import mcp_downstream, served_specs
from agentkeel.sdk.mcp import McpServer


async def test_a_server_that_cannot_start_is_withdrawn_not_fatal() -> None:
    source = McpToolSource([McpServer(name="gone", command="/nonexistent/mcp-server")])
    try:
        specs, downstreams = await source.start()
    finally:
        await source.close()
    assert specs == [] and downstreams == []
    assert list(source.withdrawn) == ["gone_*"] and "gone" in source.withdrawn["gone_*"]


def test_a_tool_with_a_reserved_argument_is_left_out_alone() -> None:
    server = McpServer(name="w", command="x")
    schema = {"type": "object", "properties": {"tenant": {"type": "string"}}}
    tools = [
        types.Tool(name="bad", input_schema=schema),
        types.Tool(name="good", input_schema={"type": "object", "properties": {}}),
    ]
    specs, refused = served_specs(McpConnection(server), tools, mcp_downstream(server))
    assert [s.name for s in specs] == ["w_good"]
    assert list(refused) == ["w_bad"] and "tenant" in refused["w_bad"]


async def test_a_server_unavailable_at_start_is_asked_again_and_its_return_restarts(
    tmp_path: Path,
) -> None:
    """The outage is the server's, not the worker's for life: once the server answers, the
    worker is told, as of a changed list, and restarts serving its tools."""
    ready = tmp_path / "ready"
    script = tmp_path / "late-server"
    server_bin = Path(sys.executable).parent / "mcp-server-time"
    script.write_text(f'#!/bin/sh\n[ -e "{ready}" ] || exit 1\nexec "{server_bin}"\n')
    script.chmod(0o755)
    changed: list[str] = []
    back = asyncio.Event()

    def on_change(name: str) -> None:
        changed.append(name)
        back.set()

    server = McpServer(name="late", command=str(script), list_timeout_s=10)
    source = McpToolSource([server], on_change=on_change, retry_s=0.2)
    try:
        specs, _ = await source.start()
        assert specs == [] and list(source.withdrawn) == ["late_*"]
        await asyncio.sleep(0.5)
        assert changed == []  # still down: asked again, nothing to restart for
        ready.touch()
        await asyncio.wait_for(back.wait(), timeout=30)
    finally:
        await source.close()
    assert changed == ["late"]
