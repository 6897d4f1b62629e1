"""agentkeel as an MCP server: its tools (`tools`) over what they do (`operations`), at
the gateway's `/mcp` (`http`) and over stdio (`agentkeel mcp`, `stdio`)."""

from agentkeel.gateway.mcp.operations import Operations
from agentkeel.gateway.mcp.tools import build_mcp_server

__all__ = ["Operations", "build_mcp_server"]
