"""Model engines that no server answers: a port bound, then released."""

from __future__ import annotations

import socket

from agentkeel.inference.engines.openai_compat import OpenAICompatEngine


def _closed_port() -> int:
    with socket.socket() as s:  # bound, then released: nothing listens there
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _unreachable(name: str) -> OpenAICompatEngine:
    return OpenAICompatEngine(base_url=f"http://127.0.0.1:{_closed_port()}/v1", model=name)
