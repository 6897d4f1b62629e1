"""agentkeel as an MCP server: its tools (`tools`) over what they do (`operations`), at
the gateway's `/mcp` (`http`) and over stdio (`agentkeel mcp`, `stdio`)."""

from agentkeel.workers.mcp_server.operations import Operations
from agentkeel.workers.mcp_server.tools import build_mcp_server

__all__ = ["Operations", "build_mcp_server"]
