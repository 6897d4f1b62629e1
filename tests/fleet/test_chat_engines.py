"""Chat models through their own templates, on real servers: llama.cpp's server and vLLM in
process, with Gemma 3 270M and the Gemma 3 chat template (the GGUF carries none, so the
servers are given it, as a business gives a model shipped without one).

What is checked: `auto` finds the template and speaks chat; the template really shapes the
prompt (the model reads turn markers a raw completion does not have); constrained plans and
labels stay valid through the chat endpoint; the router's confidence is measured from the
chat API's logprobs; a chat answer streams.
"""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator
from pathlib import Path

import jsonschema
import pytest
import pytest_asyncio

from agentkeel.inference.engines.openai_compat import OpenAICompatEngine
from agentkeel.inference.engines.protocol import (
    ChoiceConstraint,
    GenerateRequest,
    JsonSchemaConstraint,
)
from agentkeel.inference.engines.vllm_local import VllmEngine
from agentkeel.inference.llm.context import ContextBuilder
from agentkeel.inference.llm.plan_schema import plan_json_schema
from agentkeel.inference.llm.policy import LlmPolicy
from agentkeel.inference.llm.prompts import route_labels, system_prefix
from agentkeel.inference.model_builds.gemma_cpu import CHAT_TEMPLATE
from agentkeel.schemas.model_calls import RouteInput
from agentkeel.schemas.route import ConfidenceBasis, Tier
from tests.support.models import MODEL_NAME, cpu_settings, report

pytest.importorskip("vllm", reason="the llm-cpu extra")

PLAN_TOKENS = 200
PLAN_REQUEST = GenerateRequest(
    system=system_prefix(),
    prompt="User: Where is order 1001?\nPlan JSON:",
    max_tokens=PLAN_TOKENS,
    constraint=JsonSchemaConstraint(json_schema=plan_json_schema()),
)


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def llama_chat(llama_server: str) -> AsyncIterator[OpenAICompatEngine]:
    engine = OpenAICompatEngine(base_url=llama_server, model=MODEL_NAME, api="auto", timeout_s=300)
    await engine.start()
    yield engine
    await engine.close()


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def vllm_chat(model_dir: Path) -> AsyncIterator[VllmEngine]:
    settings = cpu_settings(
        str(model_dir), served_model_name=MODEL_NAME, chat_template=str(CHAT_TEMPLATE)
    )
    engine = VllmEngine(settings=dataclasses.replace(settings, warmup=False))
    await engine.start()
    yield engine
    await engine.close()


def router(engine: OpenAICompatEngine | VllmEngine) -> LlmPolicy:
    return LlmPolicy(engine, tier=Tier.LIGHT, threshold=0.0, context=ContextBuilder(budget=1400))


async def test_llama_cpp_auto_speaks_chat_through_the_models_template(
    llama_server: str, llama_chat: OpenAICompatEngine
) -> None:
    assert (llama_chat.api, llama_chat.structured_mode) == ("chat", "llamacpp")
    raw = OpenAICompatEngine(base_url=llama_server, model=MODEL_NAME, api="completions")
    short = GenerateRequest(system="You answer briefly.\n", prompt="Hello", max_tokens=1)
    try:
        as_text = await raw.generate(short)
    finally:
        await raw.close()
    as_chat = await llama_chat.generate(short)
    # `<start_of_turn>user\n` ... `<end_of_turn>\n<start_of_turn>model\n`: tokens the raw
    # completion of the same words does not have.
    text_tokens, chat_tokens = as_text.usage.prompt_tokens, as_chat.usage.prompt_tokens
    report(f"prompt tokens: completions {text_tokens}, chat {chat_tokens}")
    assert chat_tokens >= text_tokens + 6


async def test_llama_cpp_chat_output_keeps_to_a_json_schema(llama_chat: OpenAICompatEngine) -> None:
    # The schema goes as our GBNF grammar with at most one space between JSON tokens: the
    # server's own conversion allows runs of whitespace, and through this template the 270M
    # base model padded with them until the budget ended.
    schema = {"type": "object", "properties": {"city": {"type": "string", "maxLength": 40}},
              "required": ["city"], "additionalProperties": False}  # fmt: skip
    request = GenerateRequest(
        system="Answer in JSON.",
        prompt="What is the capital of France?",
        max_tokens=64,
        constraint=JsonSchemaConstraint(json_schema=schema),
    )
    result = await llama_chat.generate(request)
    jsonschema.validate(result.parsed, schema)
    assert "\n" not in result.text and "  " not in result.text, result.text


async def test_llama_cpp_chat_route_is_measured_from_logprobs(
    llama_chat: OpenAICompatEngine,
) -> None:
    routed = await router(llama_chat).route(RouteInput(question="Is SKU-00001 in stock?"))
    report(f"llama.cpp chat route: {routed.route.intent} p={routed.route.confidence:.3f}")
    assert routed.route.intent in (*route_labels(), "unknown")
    assert routed.route.basis == ConfidenceBasis.LOGPROBS


async def test_llama_cpp_chat_streams_a_constrained_answer(llama_chat: OpenAICompatEngine) -> None:
    request = GenerateRequest(
        prompt="Answer yes or no: is the sky blue?",
        max_tokens=4,
        constraint=ChoiceConstraint(choices=["yes", "no"]),
        logprobs=2,
    )
    *deltas, closing = [d async for d in llama_chat.stream(request)]
    assert "".join(d.text for d in deltas).strip() in ("yes", "no")
    assert deltas[-1].finish_reason == "stop"
    assert closing.usage is not None and closing.usage.completion_tokens >= 1
    assert any(d.logprobs for d in deltas), "chat streams carry their logprobs"


async def test_vllm_in_process_applies_the_chat_template(vllm_chat: VllmEngine) -> None:
    assert vllm_chat.api == "chat"
    prompt = await vllm_chat._prompt(GenerateRequest(system="Be brief.", prompt="Hello"))
    assert prompt["prompt_token_ids"][0] == 2, "the template's own BOS"
    assert prompt["prompt_token_ids"][1] != 2, "and only one"
    tokenizer = vllm_chat._llm.get_tokenizer()
    text = tokenizer.decode(prompt["prompt_token_ids"])
    assert "<start_of_turn>user\nBe brief.\n\nHello<end_of_turn>\n<start_of_turn>model\n" in text


async def test_vllm_in_process_chat_plans_and_routes(vllm_chat: VllmEngine) -> None:
    result = await vllm_chat.generate(PLAN_REQUEST)
    report(f"vLLM chat plan ({result.finish_reason}): {result.text[:160]}")
    jsonschema.validate(result.parsed, plan_json_schema())
    # At most one space between tokens (`bounded_whitespace`): a raw newline can only be
    # padding, JSON strings escape theirs.
    assert "\n" not in result.text, result.text
    routed = await router(vllm_chat).route(RouteInput(question="Where is order 1001?"))
    assert routed.route.basis == ConfidenceBasis.LOGPROBS
    assert 0.0 <= routed.route.confidence <= 1.0
