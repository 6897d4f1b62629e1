"""An MCP tool whose catalog name is taken degrades only itself: two servers listing one
name have both refused (withdrawn, with why); one that takes a name the domain serves
itself, or a built-in, is left out and the domain's stands. The worker and every other
tool start and serve. Real MCP servers (`mcp-server-time`, three instances)."""

from __future__ import annotations

import sys
import uuid
from pathlib import Path

from agentkeel.activities.mcp.source import McpToolSource
from agentkeel.sdk.mcp import McpServer

TIME_SERVER = str(Path(sys.executable).parent / "mcp-server-time")


async def test_colliding_names_refuse_those_tools_only() -> None:
    tag = uuid.uuid4().hex[:6]
    # Both list `get_current_time` and `convert_time` under one prefix: every name twice.
    twins = [
        McpServer(name=f"clock{tag}{i}", command=TIME_SERVER, prefix=f"shared{tag}_")
        for i in (1, 2)
    ]
    # No prefix: its `convert_time` is taken by the domain, its `get_current_time` is not.
    bare = McpServer(name=f"bare{tag}", command=TIME_SERVER, prefix="")
    source = McpToolSource([*twins, bare])
    try:
        served, _ = await source.start(taken={"convert_time", "wait"})
    finally:
        await source.close()
    assert [s.name for s in served] == ["get_current_time"]
    for name in (f"shared{tag}_get_current_time", f"shared{tag}_convert_time"):
        assert "listed by more than one server" in source.withdrawn[name]
    assert "convert_time" not in source.withdrawn  # the domain's own is served
    assert all(name in {"get_current_time"} for names in source.intents.values() for name in names)
