"""The OpenAI-compatible engine sends its own request body and reads the answer as plain JSON.

Against a real HTTP server that records what it was sent: the body is what the typed
`create` would have sent (the structured-output fields at the top level, no client-only
keys), the request id travels as a header, and the answer's text, finish, usage and
logprobs are read from the raw JSON. A 200 whose body is no completion fails with a
`MalformedAnswer` naming what came back, not an `AttributeError` from deep in a client.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from aiohttp import web
from multidict import CIMultiDict

from agentkeel.inference.engines.openai_compat import OpenAICompatEngine
from agentkeel.inference.engines.openai_output import MalformedAnswer, first_choice
from agentkeel.inference.engines.openai_request import raw_request
from agentkeel.inference.engines.protocol import (
    ChoiceConstraint,
    EngineUnavailableError,
    GenerateRequest,
)
from tests.support.models import free_port
from tests.support.openai_app import openai_app

Answer = Callable[[dict[str, Any]], web.StreamResponse]

COMPLETION = {
    "id": "c",
    "object": "chat.completion",
    "created": 0,
    "model": "fake",
    "choices": [
        {
            "index": 0,
            "message": {"role": "assistant", "content": "refund"},
            "finish_reason": "stop",
            "logprobs": {
                "content": [
                    {
                        "token": "refund",
                        "logprob": -0.25,
                        "top_logprobs": [
                            {"token": "refund", "logprob": -0.25},
                            {"token": "status", "logprob": -1.5},
                        ],
                    }
                ]
            },
        }
    ],
    "usage": {"prompt_tokens": 31, "completion_tokens": 1, "total_tokens": 32},
}


class RecordingServer:
    """`/v1/models` and `/v1/chat/completions`, answering with `answer(body)`; each
    request's JSON body and headers are kept."""

    def __init__(self, answer: Answer) -> None:
        self.answer = answer
        self.bodies: list[dict[str, Any]] = []
        self.headers: list[CIMultiDict[str]] = []  # (names as case-blind as HTTP's)

    def app(self) -> web.Application:
        return openai_app("fake", owned_by="fake", chat=self._chat)

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        self.bodies.append(body)
        self.headers.append(CIMultiDict(request.headers))
        return self.answer(body)


@pytest.fixture
async def serve() -> AsyncIterator[Callable[[Answer], Any]]:
    runners: list[web.AppRunner] = []

    async def start(answer: Answer) -> tuple[RecordingServer, OpenAICompatEngine]:
        server = RecordingServer(answer)
        runner = web.AppRunner(server.app())
        await runner.setup()
        runners.append(runner)
        port = free_port()
        await web.TCPSite(runner, "127.0.0.1", port).start()
        engine = OpenAICompatEngine(
            base_url=f"http://127.0.0.1:{port}/v1",
            model="fake",
            api_key="model-key",
            api="chat",
            structured_output="json_schema",
        )
        return server, engine

    yield start
    for runner in runners:
        await runner.cleanup()


LABELS = ChoiceConstraint(choices=["refund", "status"])


async def test_the_body_is_what_create_would_send_and_the_answer_is_read_raw(serve: Any) -> None:
    server, engine = await serve(lambda _: web.json_response(COMPLETION))
    try:
        result = await engine.generate(
            GenerateRequest(
                prompt="refund order 1001",
                system="Route.",
                max_tokens=8,
                logprobs=2,
                constraint=LABELS,
                request_id="req-7",
            )
        )
    finally:
        await engine.close()

    body = server.bodies[0]
    assert body["model"] == "fake" and body["stream"] is False and body["max_tokens"] == 8
    assert [m["role"] for m in body["messages"]] == ["system", "user"]
    assert body["logprobs"] is True and body["top_logprobs"] == 2
    # The structured output at the top level, as `extra_body` sends it; no client-only key.
    assert body["response_format"]["type"] == "json_schema"
    assert "extra_body" not in body and "extra_headers" not in body
    assert server.headers[0]["X-Request-Id"] == "req-7"
    assert server.headers[0].getall("Authorization") == ["Bearer model-key"]

    assert result.text == "refund" and result.parsed == "refund"
    assert result.finish_reason == "stop"
    assert (result.usage.prompt_tokens, result.usage.completion_tokens) == (31, 1)
    assert result.logprobs is not None and result.logprobs[0].token == "refund"
    assert result.logprobs[0].top == {"refund": -0.25, "status": -1.5}


@pytest.mark.parametrize(
    ("reply", "said"),
    [
        (lambda _: web.Response(text="<html>bad gateway</html>"), "not JSON"),
        (lambda _: web.json_response({"object": "chat.completion"}), "no choice"),
        (lambda _: web.json_response({"choices": []}), "no choice"),
        (lambda _: web.json_response({"choices": ["refund"]}), "no choice"),
        (lambda _: web.json_response(["refund"]), "no choice"),
        (lambda _: web.Response(text="[" * 100_000), "not JSON"),
        (
            lambda _: web.json_response({**COMPLETION, "usage": {"prompt_tokens": "n/a"}}),
            "malformed",
        ),
    ],
)
async def test_a_200_that_is_no_completion_is_named(serve: Any, reply: Answer, said: str) -> None:
    _, engine = await serve(reply)
    try:
        with pytest.raises(MalformedAnswer, match=said):
            await engine.generate(GenerateRequest(prompt="x", max_tokens=4))
    finally:
        await engine.close()


async def test_only_the_model_key_is_ever_sent(serve: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """The client's bare `post` may send any credential it finds (an admin key in the
    environment); a model server is sent its own key, or `EMPTY` where none is set."""
    monkeypatch.setenv("OPENAI_ADMIN_KEY", "admin-key")
    server, engine = await serve(lambda _: web.json_response(COMPLETION))
    keyless = OpenAICompatEngine(base_url=engine._base_url, model="fake", api_key="", api="chat")
    try:
        await keyless.generate(GenerateRequest(prompt="x", max_tokens=4))
    finally:
        await keyless.close()
        await engine.close()
    assert server.headers[0].getall("Authorization") == ["Bearer EMPTY"]
    assert not any("admin-key" in value for value in server.headers[0].values())


async def test_a_server_that_is_down_for_now_is_unavailable(serve: Any) -> None:
    # The caller may serve the step otherwise (the rules) or retry: not a refused request.
    _, engine = await serve(lambda _: web.json_response({"error": "loading"}, status=503))
    try:
        with pytest.raises(EngineUnavailableError, match="503"):
            await engine.generate(GenerateRequest(prompt="x", max_tokens=4))
    finally:
        await engine.close()


async def test_content_given_as_parts_reads_as_their_text(serve: Any) -> None:
    parts = [
        {"type": "text", "text": "ref"},
        {"type": "image_url"},
        {"type": "text", "text": "und"},
    ]
    choice = {"index": 0, "message": {"role": "assistant", "content": parts}}
    _, engine = await serve(lambda _: web.json_response({"choices": [choice]}))
    try:
        result = await engine.generate(GenerateRequest(prompt="x", max_tokens=4))
    finally:
        await engine.close()
    assert result.text == "refund"


async def test_an_answer_without_usage_or_text_reads_as_empty(serve: Any) -> None:
    choice = {"index": 0, "message": {"role": "assistant", "content": None}, "finish_reason": None}
    _, engine = await serve(lambda _: web.json_response({"choices": [choice]}))
    try:
        result = await engine.generate(GenerateRequest(prompt="x", max_tokens=4))
    finally:
        await engine.close()
    assert result.text == "" and result.finish_reason is None
    assert (result.usage.prompt_tokens, result.usage.completion_tokens) == (0, 0)


def test_raw_request_moves_client_only_keys_out_of_the_body() -> None:
    body, headers = raw_request(
        {
            "model": "m",
            "stream": True,
            "extra_body": {"structured_outputs": {"json": {"type": "object"}}},
            "extra_headers": {"X-Request-Id": "r"},
        }
    )
    assert body == {
        "model": "m",
        "stream": True,
        "structured_outputs": {"json": {"type": "object"}},
    }
    assert headers == {"X-Request-Id": "r"}


def test_first_choice_reads_the_first_of_several() -> None:
    answer, choice = first_choice(b'{"choices": [{"text": "a"}, {"text": "b"}], "usage": null}')
    assert choice == {"text": "a"} and answer["usage"] is None
