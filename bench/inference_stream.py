"""Streaming overhead: the first answer token as a client sees it, beside the engine's own.

`python -m bench.inference --streaming-only` (or the first part of `python -m bench.inference`).

Runs of `AgentWorkflow` over the real workers: the rules plan the run (the same plan every
time, so each run reaches its respond step the same way), the respond step writes its
answer with a real model through the OpenAI-compatible engine: llama.cpp's server of the
test model on the CPU (`--server-url` names any other server). Each run is started with the
SDK client (`AgentClient.ask_streaming`, which follows the run's token stream in Redis) and
followed at the same time through the gateway's SSE (`GET /v1/runs/{id}/events`).

All times are from the moment the respond step sends its request to the server, read in
this one process with one clock:
  engine    the engine's first streamed token (the server's time to first token)
  SDK       the first `token` event handed to `ask_streaming`'s `on_event`
  gateway   the first `event: token` line of the SSE stream
Each client's figure is printed beside the engine's, with the difference (the goal: at most
10 ms). Every run has its own tenant, so no cache answers for the model.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import statistics
import time
import uuid
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack
from dataclasses import dataclass, field

import httpx

from agentkeel.client.agent_client import AgentClient
from agentkeel.examples.shop.rules.policy import RulesPolicy
from agentkeel.gateway.app import create_app
from agentkeel.gateway.keys import ApiKeys
from agentkeel.gateway.server import serving
from agentkeel.inference.engines.openai_compat import OpenAICompatEngine
from agentkeel.inference.engines.protocol import Engine, GenerateRequest, GenerateResult, TokenDelta
from agentkeel.inference.llm.policy import LlmPolicy
from agentkeel.inference.policy import TokenSink
from agentkeel.schemas import model_calls as calls
from agentkeel.schemas.request import AgentRequest
from agentkeel.schemas.route import Tier
from agentkeel.schemas.tokens import TokenEvent, TokenEventType
from agentkeel.settings.ports import free_port
from bench.plan_servers import MODEL_NAME, llama_server_url
from bench.stack import StackConfig, bench_stack

QUESTION = "What is your return policy for damaged items?"


@dataclass
class EngineClock:
    """When the respond step's request went to the server, and its first token came back."""

    sent: list[float] = field(default_factory=list)
    first: list[float] = field(default_factory=list)


class ClockedEngine:
    """An `Engine` that notes the times of each stream's request and first text (bench only)."""

    def __init__(self, engine: Engine, clock: EngineClock) -> None:
        self.engine, self.clock, self.name = engine, clock, engine.name

    async def start(self) -> None:
        await self.engine.start()

    async def close(self) -> None:
        await self.engine.close()

    async def generate(self, request: GenerateRequest) -> GenerateResult:
        return await self.engine.generate(request)

    async def stream(self, request: GenerateRequest) -> AsyncIterator[TokenDelta]:
        self.clock.sent.append(time.perf_counter())
        seen = False
        async for delta in self.engine.stream(request):
            if delta.text and not seen:
                seen = True
                self.clock.first.append(time.perf_counter())
            yield delta


class RulesPlansModelAnswers(RulesPolicy):
    """The rules route and plan; the model writes the answer (its respond step, streamed)."""

    name = "rules+model-answers"

    def __init__(self, engine: Engine) -> None:
        super().__init__()
        self.model = LlmPolicy(engine, tier=Tier.LIGHT, answer_max_tokens=16)

    async def respond(
        self, request: calls.RespondInput, sink: TokenSink | None = None
    ) -> calls.RespondResult:
        return await self.model.respond(request, sink)


async def _first_sse_token(http: httpx.AsyncClient, workflow_id: str) -> float | None:
    async with http.stream("GET", f"/v1/runs/{workflow_id}/events") as response:
        async for line in response.aiter_lines():
            if line == "event: token":
                return time.perf_counter()
    return None  # the run's outcome came without a token (an empty answer)


Sample = tuple[float, float, float]
"""(engine, SDK, gateway) ms from the respond step's request to its first token."""


async def one_run(
    client: AgentClient, http: httpx.AsyncClient, clock: EngineClock
) -> Sample | None:
    """One run's three times, or None when the model wrote no text (nothing to stream)."""
    sdk: list[float] = []
    sse: list[asyncio.Task[float | None]] = []
    before = len(clock.sent), len(clock.first)

    def on_event(event: TokenEvent) -> None:
        if event.type is TokenEventType.TOKEN and not sdk:
            sdk.append(time.perf_counter())

    def on_started(workflow_id: str) -> None:
        sse.append(asyncio.create_task(_first_sse_token(http, workflow_id)))

    request = AgentRequest(question=QUESTION, tenant=f"bench-{uuid.uuid4().hex[:8]}")
    await client.ask_streaming(request, on_event=on_event, on_started=on_started)
    gateway = await sse[0]
    sent, first = clock.sent[before[0] :], clock.first[before[1] :]
    if len(sent) != 1:
        raise RuntimeError(f"{len(sent)} model streams in one run: the respond step's alone?")
    if not first or not sdk or gateway is None:
        return None
    return tuple((t - sent[0]) * 1000 for t in (first[0], sdk[0], gateway))  # type: ignore[return-value]


def _line(name: str, values: list[float], engine: list[float]) -> None:
    p50 = statistics.median(values)
    p90 = statistics.quantiles(values, n=10)[-1] if len(values) > 1 else p50
    if values is engine:
        print(f"  {name:<28}{p50:>9.1f}{p90:>9.1f}", flush=True)
        return
    more = [v - e for v, e in zip(values, engine, strict=True)]
    print(
        f"  {name:<28}{p50:>9.1f}{p90:>9.1f}   {statistics.median(more):>+7.1f} "
        f"(p90 {statistics.quantiles(more, n=10)[-1] if len(more) > 1 else more[0]:+.1f})",
        flush=True,
    )


async def streaming_overhead(args: argparse.Namespace) -> None:
    async with AsyncExitStack() as stack:
        url = args.server_url or await stack.enter_async_context(llama_server_url())
        clock = EngineClock()
        engine = ClockedEngine(
            OpenAICompatEngine(base_url=url, model=args.server_model, api="chat"), clock
        )
        await engine.start()
        stack.push_async_callback(engine.close)
        bench = await stack.enter_async_context(
            bench_stack(
                StackConfig.from_env(),
                policy=RulesPlansModelAnswers(engine),
                stand_ins=[],
                token_streams=True,
            )
        )
        client = AgentClient.from_settings(bench.client, bench.settings)
        stack.push_async_callback(client.close)
        app = create_app(client, ApiKeys([]))
        base = await stack.enter_async_context(serving(app, "127.0.0.1", free_port()))
        http = await stack.enter_async_context(
            httpx.AsyncClient(base_url=base, timeout=120, trust_env=False)
        )
        for _ in range(args.warmup):
            await one_run(client, http, clock)
        runs = [await one_run(client, http, clock) for _ in range(args.streams)]
    gc.collect()  # evicted workflow coroutines finalized inside the loop (see bench.gateway)
    samples = [r for r in runs if r is not None]
    if not samples:
        raise SystemExit("no run's answer had any text: nothing was streamed")
    engine_ms, sdk_ms, sse_ms = ([s[i] for s in samples] for i in range(3))
    print(
        f"\ntime to first token from the respond step's request to {engine.name} "
        f"({len(samples)} runs after {args.warmup} warm; "
        f"{len(runs) - len(samples)} left out: an empty answer streams nothing)"
    )
    print(f"  {'seen by':<28}{'p50 ms':>9}{'p90 ms':>9}   {'more than the engine, ms p50':>7}")
    _line("engine (server's stream)", engine_ms, engine_ms)
    _line("SDK client (ask_streaming)", sdk_ms, engine_ms)
    _line("gateway SSE", sse_ms, engine_ms)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--streams", type=int, default=20, help="runs for the streaming figures")
    parser.add_argument("--warmup", type=int, default=2, help="runs before the streaming figures")
    parser.add_argument(
        "--server-url", default=None, help="an OpenAI-compatible server (default: llama.cpp's)"
    )
    parser.add_argument("--server-model", default=MODEL_NAME, help="its model name")
