"""A model server that is down, at the policy: what the rules cannot serve still fails with
the engine's error, an answer already streaming is not followed by the rules', and a
connection dropped unanswered is tried once more."""

from __future__ import annotations

import asyncio
import json

import pytest

from agentkeel.examples.shop.rules.policy import RulesPolicy
from agentkeel.inference.engines.openai_compat import OpenAICompatEngine
from agentkeel.inference.engines.protocol import EngineUnavailableError, GenerateRequest
from agentkeel.inference.fallback import FallbackPolicy
from agentkeel.inference.llm.policy import LlmPolicy
from agentkeel.inference.policy import TokenSink
from agentkeel.schemas.model_calls import RespondInput, RespondResult, RouteInput, RouteResult
from agentkeel.schemas.route import Route, Tier
from tests.support.engines import _unreachable


async def test_what_the_rules_cannot_serve_still_fails_with_the_engine_error() -> None:
    engine = _unreachable("router")
    policy = FallbackPolicy(LlmPolicy(engine, tier=Tier.LIGHT), RulesThatServeNothing())
    try:
        with pytest.raises(EngineUnavailableError, match="no model server answers"):
            await policy.route(RouteInput(question="Where is order 1001?"))
    finally:
        await engine.close()
    assert policy.fallbacks == 0


class RulesThatServeNothing(RulesPolicy):
    async def route(self, request: RouteInput) -> RouteResult:
        raise ValueError("no rule matches")


class FakeEngineThatDiesMidAnswer(RulesPolicy):
    """A fake at the model boundary: its answer's first words are streamed, then the server
    goes away."""

    async def respond(self, request: RespondInput, sink: TokenSink | None = None) -> RespondResult:
        if sink is not None:
            await sink("Order 1001 is")
        raise EngineUnavailableError("the server went away")


async def test_an_answer_already_streaming_is_not_followed_by_the_rules_answer() -> None:
    policy = FallbackPolicy(FakeEngineThatDiesMidAnswer(), RulesPolicy())
    streamed: list[str] = []

    async def sink(piece: str) -> None:
        streamed.append(piece)

    request = RespondInput(
        question="Where is order 1001?",
        route=Route(intent="order_status", confidence=1.0),
        steps=[],
    )
    with pytest.raises(EngineUnavailableError):
        await policy.respond(request, sink)
    assert streamed == ["Order 1001 is"] and policy.fallbacks == 0


async def test_a_connection_the_server_dropped_unanswered_is_tried_once_more() -> None:
    # A real socket server that closes its first connection without answering (as llama.cpp's
    # server may close a pooled keep-alive connection while a request goes out), then
    # answers on the next: the step gets the model's answer, not the rules' stand-in.
    connections = 0
    body = json.dumps({
        "id": "c1", "object": "text_completion", "created": 0, "model": "m",
        "choices": [{"index": 0, "text": "Paris", "finish_reason": "stop", "logprobs": None}],
        "usage": {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4},
    }).encode()  # fmt: skip

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal connections
        connections += 1
        await reader.readuntil(b"\r\n\r\n")
        if connections > 1:
            head = f"HTTP/1.1 200 OK\r\nContent-Length: {len(body)}\r\nConnection: close"
            writer.write(f"{head}\r\nContent-Type: application/json\r\n\r\n".encode() + body)
            await writer.drain()
        writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    engine = OpenAICompatEngine(
        base_url=f"http://127.0.0.1:{port}/v1", model="m", api="completions"
    )
    try:
        result = await engine.generate(GenerateRequest(prompt="Capital of France:", max_tokens=4))
        assert result.text == "Paris"
        assert connections == 2
        # Once only: a server that never answers is down, and says so.
        connections = -10
        with pytest.raises(EngineUnavailableError, match="no model server answers"):
            await engine.generate(GenerateRequest(prompt="Capital of France:", max_tokens=4))
        assert connections == -8
    finally:
        await engine.close()
        server.close()
        await server.wait_closed()
