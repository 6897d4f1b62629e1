"""`python -m agentkeel.gateway`: the HTTP/SSE gateway at `AGENTKEEL_GATEWAY_ADDRESS`."""

from __future__ import annotations

import sys

from agentkeel.gateway.server import serve_gateway
from agentkeel.settings.event_loop import run as run_loop
from agentkeel.settings.program import run_program


def main() -> int:
    return run_program(
        "gateway", lambda settings: run_loop(serve_gateway(settings), settings.event_loop)
    )


if __name__ == "__main__":
    sys.exit(main())
