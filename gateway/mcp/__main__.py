"""`python -m agentkeel.gateway.mcp`: agentkeel's MCP tools over stdio (`agentkeel mcp`).

Logs go to stderr: stdout carries the protocol."""

from __future__ import annotations

import sys

from agentkeel.gateway.mcp.stdio import serve_stdio
from agentkeel.settings.event_loop import run as run_loop
from agentkeel.settings.model import Settings
from agentkeel.settings.program import run_program
from agentkeel.settings.tracing import configure_tracing


def _serve(settings: Settings) -> None:
    # agentkeel's own process: it installs a tracer provider if an exporter is configured.
    configure_tracing("agentkeel-mcp")
    run_loop(serve_stdio(settings), settings.event_loop)


def main() -> int:
    return run_program("mcp", _serve)


if __name__ == "__main__":
    sys.exit(main())
