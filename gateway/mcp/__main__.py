"""`python -m agentkeel.gateway.mcp`: agentkeel's MCP tools over stdio (`agentkeel mcp`).

Logs go to stderr: stdout carries the protocol."""

from __future__ import annotations

import sys

from agentkeel.gateway.mcp.stdio import serve_stdio
from agentkeel.settings.event_loop import run as run_loop
from agentkeel.settings.program import run_program


def main() -> int:
    return run_program("mcp", lambda settings: run_loop(serve_stdio(settings), settings.event_loop))


if __name__ == "__main__":
    sys.exit(main())
