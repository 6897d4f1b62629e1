"""The engines' contract without a model server: vLLM's engine arguments, a server that does
not answer or a model that does not load failing at start, and structured output degrading
to what a (fake, in-process) server offers.

Runs only where vLLM is installed (the `llm-cpu` or `gpu` extra); skipped otherwise.
"""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path

import pytest
from aiohttp import web

pytest.importorskip("vllm", reason="vLLM is not installed (the llm-cpu or gpu extra)")
pytest.importorskip("openai", reason="openai is not installed (the llm-cpu or gpu extra)")

from agentkeel.inference.engines import (
    ConstraintViolationError,
    EngineUnavailableError,
    GenerateRequest,
    JsonSchemaConstraint,
)
from agentkeel.inference.engines.openai_compat import OpenAICompatEngine
from agentkeel.inference.engines.vllm_local import VllmEngine
from tests.support.models import CITY_SCHEMA, MODEL_NAME, cpu_settings, free_port
from tests.support.openai_app import openai_app


def test_settings_map_to_engine_args() -> None:
    from agentkeel.inference.engines.vllm_local import SpeculativeSettings, VllmSettings

    settings = VllmSettings(
        model="/models/m",
        quantization="awq",
        speculative=SpeculativeSettings(num_speculative_tokens=3),
        rope_scaling={"rope_type": "yarn", "factor": 4.0, "rope_theta": 1e6},
        engine_overrides={"swap_space": 0},
    )
    args = settings.engine_args()
    assert args["quantization"] == "awq"
    assert args["speculative_config"]["method"] == "ngram"
    assert args["hf_overrides"] == {"rope_parameters": dict(settings.rope_scaling or {})}
    assert args["swap_space"] == 0
    assert "max_model_len" not in args  # None: vLLM's default
    from vllm.engine.arg_utils import AsyncEngineArgs

    known = {f.name for f in dataclasses.fields(AsyncEngineArgs)}
    assert set(args) - {"swap_space"} <= known
    # One structured-output backend for every request, as a config object vLLM accepts.
    from agentkeel.inference.engines.vllm_local import _typed_configs

    assert _typed_configs(args)["structured_outputs_config"].backend == "guidance"


async def test_unreachable_server_fails_at_start() -> None:
    url = f"http://127.0.0.1:{free_port()}/v1"
    engine = OpenAICompatEngine(base_url=url, model=MODEL_NAME, check_timeout_s=2.0)
    started = time.monotonic()
    with pytest.raises(EngineUnavailableError, match=f"no model server answers at {url}"):
        await engine.start()
    assert time.monotonic() - started < 5.0


async def test_unloadable_model_fails_at_start(tmp_path: Path) -> None:
    engine = VllmEngine(settings=cpu_settings(str(tmp_path / "missing")))
    with pytest.raises(EngineUnavailableError, match="could not load"):
        await engine.start()


class FakeJsonObjectOnlyServer:
    """Fake of a completions server that offers only `json_object` (as llama.cpp may).

    Refuses `structured_outputs` and `json_schema` with 400, like a strict server, and
    answers `reply` otherwise; records which modes were asked for.
    """

    def __init__(self, reply: str) -> None:
        self.reply = reply
        self.seen: list[str] = []

    def app(self) -> web.Application:
        return openai_app("fake", owned_by="fake", completions=self._completions)

    async def _completions(self, request: web.Request) -> web.Response:
        body = await request.json()
        mode = (
            "vllm"
            if "structured_outputs" in body
            else body.get("response_format", {}).get("type", "none")
        )
        self.seen.append(mode)
        if mode in ("vllm", "json_schema"):
            error = {"message": f"{mode} is not supported", "type": "invalid_request_error"}
            return web.json_response({"error": error}, status=400)
        choice = {"index": 0, "text": self.reply, "finish_reason": "stop", "logprobs": None}
        return web.json_response(
            {"id": "c", "object": "text_completion", "created": 0, "model": "fake",
             "choices": [choice]}
        )  # fmt: skip


async def _serve(fake: FakeJsonObjectOnlyServer) -> tuple[web.AppRunner, str]:
    runner = web.AppRunner(fake.app())
    await runner.setup()
    port = free_port()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    return runner, f"http://127.0.0.1:{port}/v1"


async def test_structured_output_degrades_to_what_the_server_offers() -> None:
    fake = FakeJsonObjectOnlyServer('{"city": "Paris", "country": "France", "is_capital": true}')
    runner, url = await _serve(fake)
    try:
        engine = OpenAICompatEngine(base_url=url, model="fake")
        await engine.start()
        assert engine.structured_mode == "json_schema"
        request = GenerateRequest(
            prompt="x", constraint=JsonSchemaConstraint(json_schema=CITY_SCHEMA)
        )
        result = await engine.generate(request)
        assert result.parsed == {"city": "Paris", "country": "France", "is_capital": True}
        assert fake.seen == ["json_schema", "json_object"]
        await engine.generate(request)
        assert fake.seen[2:] == ["json_object"]  # the working mode is remembered
        assert engine.structured_mode == "json_object"
    finally:
        await runner.cleanup()


async def test_output_off_schema_is_a_constraint_violation() -> None:
    fake = FakeJsonObjectOnlyServer('{"city": "Paris"}')
    runner, url = await _serve(fake)
    try:
        engine = OpenAICompatEngine(base_url=url, model="fake", structured_output="json_object")
        await engine.start()
        request = GenerateRequest(
            prompt="x", constraint=JsonSchemaConstraint(json_schema=CITY_SCHEMA)
        )
        with pytest.raises(ConstraintViolationError, match="country") as caught:
            await engine.generate(request)
        assert caught.value.text == '{"city": "Paris"}'
    finally:
        await runner.cleanup()
