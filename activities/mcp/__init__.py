"""MCP servers as a source of a domain's tools: each server's connection (`connection`),
its tools as catalog entries and their policy (`specs`), one `tools/call` as a tool
function (`calls`), and a worker's servers together (`source`)."""

from agentkeel.activities.mcp.calls import META_PREFIX, McpCall
from agentkeel.activities.mcp.connection import McpConnection, McpUnreachable
from agentkeel.activities.mcp.source import McpToolSource
from agentkeel.activities.mcp.specs import McpPolicy, mcp_downstream, policy, tool_specs

__all__ = [
    "META_PREFIX",
    "McpCall",
    "McpConnection",
    "McpPolicy",
    "McpToolSource",
    "McpUnreachable",
    "mcp_downstream",
    "policy",
    "tool_specs",
]
