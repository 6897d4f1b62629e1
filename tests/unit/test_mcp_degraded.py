"""A misbehaving MCP server degrades its own tools only (no server runs: its command does not
exist, and one tool of a listing cannot be served)."""

from __future__ import annotations

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
