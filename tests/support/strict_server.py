"""A fake hosted model at the model boundary: an OpenAI-compatible chat server as strict as
OpenAI's (a `json_schema` response format that breaks its documented rules is refused
with 400, `tests.support.openai_strict`) that returns no logprobs, as the large hosted
providers do not. What it writes is scripted: the route's intent and reported confidence
per question, a one-step plan, the first label of a choice, a fixed answer."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any

from aiohttp import web

from agentkeel.settings.ports import free_port
from tests.support.openai_app import openai_app
from tests.support.openai_strict import strict_problems

MODEL = "fake-hosted"


class FakeStrictHostedServer:
    """Chat completions only; `/v1/models` owned by `openai`; nothing answers elsewhere."""

    def __init__(self, confidence: Mapping[str, int], *, intent: str, plan_step: dict[str, Any]):
        """`confidence`: the confidence (0-10) reported for a question holding each key."""
        self.confidence = dict(confidence)
        self.intent = intent
        self.plan_step = plan_step
        self.refused: list[str] = []
        self.asked_logprobs = 0
        self.schemas: list[dict[str, Any]] = []

    def app(self) -> web.Application:
        return openai_app(MODEL, owned_by="openai", chat=self._chat)

    async def _chat(self, request: web.Request) -> web.Response:
        body = await request.json()
        self.asked_logprobs += bool(body.get("logprobs"))
        prompt = body["messages"][-1]["content"]
        response_format = body.get("response_format")
        if response_format is None:
            return _reply("Your order is on its way.")
        spec = response_format.get("json_schema", {})
        schema = spec.get("schema", {})
        problems = strict_problems(schema) if spec.get("strict") else ["strict is not true"]
        if response_format.get("type") != "json_schema" or problems:
            self.refused.append("; ".join(problems) or str(response_format.get("type")))
            error = {"message": f"Invalid schema: {problems}", "type": "invalid_request_error"}
            return web.json_response({"error": error}, status=400)
        self.schemas.append(schema)
        return _reply(json.dumps(self._document(schema, prompt)))

    def _document(self, schema: dict[str, Any], prompt: str) -> dict[str, Any]:
        properties = schema["properties"]
        if set(properties) == {"intent", "confidence"}:
            question = prompt.rsplit("User:", 1)[-1]
            said = [v for key, v in self.confidence.items() if key in question]
            return {"intent": self.intent, "confidence": said[0] if said else 0}
        if set(properties) == {"choice"}:
            return {"choice": properties["choice"]["enum"][0]}
        step = _filled(self.plan_step, _branch(properties["steps"]["items"], self.plan_step))
        return _filled({"intent": self.intent, "rationale": "look it up", "steps": [step]}, schema)


def _branch(items: dict[str, Any], step: dict[str, Any]) -> dict[str, Any]:
    """The step schema (one branch of the steps' anyOf) of the step's tool."""
    tool = next(iter(step))
    branches = items.get("anyOf", [items])
    found: dict[str, Any] = next(b for b in branches if tool in b.get("properties", {}))
    return found


def _filled(document: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    """`document` with every property of `schema` it leaves out written as null: what a
    strict server writes for a field the model leaves out (all are required there)."""
    return {name: document.get(name) for name in schema["properties"]}


def _reply(text: str) -> web.Response:
    message = {"role": "assistant", "content": text}
    choice = {"index": 0, "message": message, "finish_reason": "stop", "logprobs": None}
    usage = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
    return web.json_response(
        {"id": "c", "object": "chat.completion", "created": 0, "model": MODEL,
         "choices": [choice], "usage": usage}
    )  # fmt: skip


@asynccontextmanager
async def serving(server: FakeStrictHostedServer) -> AsyncIterator[str]:
    """The fake served on a free port: its `/v1` base URL."""
    runner = web.AppRunner(server.app())
    await runner.setup()
    port = free_port()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    try:
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        await runner.cleanup()
