"""A token-timed OpenAI-compatible model server: a fake at the model boundary, for benchmarks.

Every system a benchmark compares reaches it through its own real model client (agentkeel's
OpenAI-compatible engine and LLM policy, the OpenAI Agents SDK's and Pydantic AI's OpenAI
models), so each pays for its own prompts, schemas, parsing and HTTP. What it answers
comes from a `Scenario` (the output an ideal model would write, in the caller's own
format: text, a JSON document for its schema, or tool calls, parallel ones included);
how long it takes is a real model's shape:

    prefill (prompt tokens x prefill time) + time to first token + output tokens x per token

streamed token by token where the caller streams. Speeds are arguments (`Speed`); the
`SPEEDS` are the benchmarks' named ones. Tokens are counted by one rule for every caller
(`bench.token_text`), so no system is favoured by its format.

    python -m bench.token_server --port 8100 --speed fast
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, Protocol

from aiohttp import web

from bench.token_text import Reply, choice_logprobs, count_tokens, split_tokens


@dataclass(frozen=True)
class Speed:
    """How long a model takes: per prompt token, to its first token, per output token."""

    name: str
    ttft_s: float
    per_token_s: float
    prefill_per_token_s: float = 0.0

    def prefill_s(self, prompt_tokens: int) -> float:
        return prompt_tokens * self.prefill_per_token_s


SPEEDS = {
    "instant": Speed("instant", 0.0, 0.0),
    # A small model on a GPU.
    "fast": Speed("fast", 0.050, 0.005),
    # A 70B-class model.
    "slow": Speed("slow", 0.300, 0.030),
}


class Scenario(Protocol):
    """What the ideal model answers to one chat-completions request body."""

    def reply(self, body: dict[str, Any]) -> Reply: ...


@dataclass
class ServerLog:
    """What was asked and answered: requests, output tokens, per-request model time."""

    requests: int = 0
    output_tokens: int = 0
    prompt_tokens: int = 0
    model_s: list[float] = field(default_factory=list)


class TokenTimedServer:
    """The aiohttp application serving `/v1/models` and `/v1/chat/completions`."""

    def __init__(self, scenario: Scenario, speed: Speed, *, model: str = "ideal") -> None:
        self.scenario = scenario
        self.speed = speed
        self.model = model
        self.log = ServerLog()

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_get("/v1/models", self._models)
        app.router.add_post("/v1/chat/completions", self._chat)
        # A benchmark driving the server in a process of its own (`bench.token_apart`).
        app.router.add_put("/bench/speed", self._set_speed)
        app.router.add_get("/bench/requests", self._requests)
        return app

    async def requests(self) -> int:
        """Requests answered so far (as `bench.token_apart.RemoteTokenServer` asks)."""
        return self.log.requests

    async def set_speed(self, speed: Speed) -> None:
        self.speed = speed

    async def _set_speed(self, request: web.Request) -> web.Response:
        self.speed = Speed(**await request.json())
        return web.json_response({"speed": self.speed.name})

    async def _requests(self, _: web.Request) -> web.Response:
        return web.json_response({"requests": self.log.requests})

    async def _models(self, _: web.Request) -> web.Response:
        # Neither vLLM nor llama.cpp: callers use the chat API with strict JSON schemas.
        model = {"id": self.model, "object": "model", "created": 0, "owned_by": "bench"}
        return web.json_response({"object": "list", "data": [model]})

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        started = time.perf_counter()
        body = await request.json()
        reply = self.scenario.reply(body)
        prompt_tokens = count_tokens(json.dumps(body.get("messages", [])))
        tokens = split_tokens(reply.spoken())
        self.log.requests += 1
        self.log.prompt_tokens += prompt_tokens
        self.log.output_tokens += len(tokens)
        first_at = started + self.speed.prefill_s(prompt_tokens) + self.speed.ttft_s
        usage = {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": len(tokens),
            "total_tokens": prompt_tokens + len(tokens),
        }
        try:
            if body.get("stream"):
                return await self._stream(request, body, reply, tokens, first_at, usage)
            await _sleep_until(first_at + self.speed.per_token_s * max(0, len(tokens) - 1))
            return web.json_response(self._completion(body, reply, tokens, usage))
        finally:
            self.log.model_s.append(time.perf_counter() - started)

    def _completion(
        self, body: dict[str, Any], reply: Reply, tokens: list[str], usage: dict[str, int]
    ) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": reply.text}
        if reply.tool_calls:
            message["tool_calls"] = [
                {"id": c.call_id, "type": "function", "function": c.function()}
                for c in reply.tool_calls
            ]
        choice: dict[str, Any] = {
            "index": 0,
            "message": message,
            "finish_reason": "tool_calls" if reply.tool_calls else "stop",
            "logprobs": _logprobs(body, reply, tokens),
        }
        return {**self._envelope("chat.completion"), "choices": [choice], "usage": usage}

    async def _stream(
        self,
        request: web.Request,
        body: dict[str, Any],
        reply: Reply,
        tokens: list[str],
        first_at: float,
        usage: dict[str, int],
    ) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        envelope = self._envelope("chat.completion.chunk")

        async def send(delta: dict[str, Any], finish: str | None = None) -> None:
            chunk = {**envelope, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
            await response.write(f"data: {json.dumps(chunk)}\n\n".encode())

        at = first_at
        for delta in reply.deltas(tokens):
            await _sleep_until(at)
            await send(delta)
            at += self.speed.per_token_s
        await send({}, "tool_calls" if reply.tool_calls else "stop")
        if (body.get("stream_options") or {}).get("include_usage"):
            final = {**envelope, "choices": [], "usage": usage}
            await response.write(f"data: {json.dumps(final)}\n\n".encode())
        await response.write(b"data: [DONE]\n\n")
        await response.write_eof()
        return response

    def _envelope(self, kind: str) -> dict[str, Any]:
        return {
            "id": f"chatcmpl-{uuid.uuid4().hex[:12]}",
            "object": kind,
            "created": int(time.time()),
            "model": self.model,
        }


def _logprobs(body: dict[str, Any], reply: Reply, tokens: list[str]) -> dict[str, Any] | None:
    """Per-token logprobs where asked for: the ideal model's certainty about its choice."""
    if not body.get("logprobs") or reply.tool_calls:
        return None
    return {"content": choice_logprobs(tokens, reply, int(body.get("top_logprobs") or 5))}


async def _sleep_until(deadline: float) -> None:
    delay = deadline - time.perf_counter()
    if delay > 0:
        await asyncio.sleep(delay)


@asynccontextmanager
async def serving(
    scenario: Scenario, speed: Speed, *, host: str = "127.0.0.1", port: int = 0
) -> AsyncIterator[tuple[str, TokenTimedServer]]:
    """The server on `host:port` (0: a free port) for the block: its `/v1` URL, and itself."""
    server = TokenTimedServer(scenario, speed)
    runner = web.AppRunner(server.app(), access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, host, port)
    await site.start()
    bound = runner.addresses[0][1]
    try:
        yield f"http://{host}:{bound}/v1", server
    finally:
        await runner.cleanup()


def main() -> None:
    from bench.ideal_model import IdealShapeModel

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8100)
    parser.add_argument("--speed", choices=sorted(SPEEDS), default="fast")
    parser.add_argument("--ttft-ms", type=float, help="overrides the speed's time to first token")
    parser.add_argument("--per-token-ms", type=float, help="overrides the speed's per-token time")
    parser.add_argument("--prefill-ms", type=float, default=0.0, help="per prompt token")
    parser.add_argument(
        "--route-confidence", type=float, default=0.95, help="the ideal router's certainty"
    )
    args = parser.parse_args()
    base = SPEEDS[args.speed]
    speed = Speed(
        base.name,
        base.ttft_s if args.ttft_ms is None else args.ttft_ms / 1000,
        base.per_token_s if args.per_token_ms is None else args.per_token_ms / 1000,
        args.prefill_ms / 1000,
    )

    async def run() -> None:
        scenario = IdealShapeModel(route_confidence=args.route_confidence)
        async with serving(scenario, speed, host=args.host, port=args.port) as (url, _):
            print(f"token-timed model server at {url} ({speed})", flush=True)
            await asyncio.Event().wait()

    asyncio.run(run())


if __name__ == "__main__":
    main()
