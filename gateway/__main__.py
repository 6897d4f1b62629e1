"""`python -m agentkeel.gateway`: the HTTP/SSE gateway at `AGENTKEEL_GATEWAY_ADDRESS`."""

from __future__ import annotations

import sys

from agentkeel.gateway.server import serve_gateway
from agentkeel.settings.event_loop import run as run_loop
from agentkeel.settings.model import Settings
from agentkeel.settings.program import run_program
from agentkeel.settings.tracing import configure_tracing


def _serve(settings: Settings) -> None:
    # agentkeel's own process: it installs a tracer provider if an exporter is configured.
    configure_tracing("agentkeel-gateway")
    run_loop(serve_gateway(settings), settings.event_loop)


def main() -> int:
    return run_program("gateway", _serve)


if __name__ == "__main__":
    sys.exit(main())
