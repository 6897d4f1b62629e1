"""CPU per model call: agentkeel's OpenAI-compatible engine beside the typed client call.

    python -m bench.engine_calls [--calls 300] [--rounds 3]

The router's and the planner's requests are the real ones: agentkeel's LLM policy writes
them for a `bench.peer_domain` question (prompts, the label choice with its logprobs, the
plan schema, streamed), recorded once against the token-timed server at the instant speed
(`bench.token_server`, in this process). Each is then sent `--calls` times two ways, the
ways alternating every round:

* **engine** — what the engine does: the body sent with the client's `post` and the answer
  read as plain JSON (a stream's events read raw);
* **typed** — the same parameters through the client's typed `create` (which transforms
  every parameter and builds a typed model of the answer), a stream opened with
  `with_streaming_response` and read the same raw way: the engine's transport before.

Printed: CPU ms per call (this process's, the server's share included, which is the same
for both), each round's median, and engine / typed. No Temporal, no Postgres.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from collections.abc import Awaitable, Callable
from typing import Any

from agentkeel.activities.plan_ahead import AHEAD_ROUTE
from agentkeel.inference.engines.openai_compat import OpenAICompatEngine
from agentkeel.inference.engines.openai_request import request_params
from agentkeel.inference.engines.openai_stream import sse_data
from agentkeel.inference.engines.protocol import GenerateRequest
from agentkeel.schemas.model_calls import PlanInput, RouteInput
from agentkeel.sdk.loading import load_domain
from agentkeel.sdk.serving import install_domain
from agentkeel.settings.model import Settings
from agentkeel.workers.policy_assembly import build_policy
from bench.ideal_model import IdealShapeModel
from bench.peer_agentkeel import DOMAIN, tier
from bench.peer_cases import Case, batch_name
from bench.token_server import SPEEDS, serving

Call = Callable[[], Awaitable[Any]]


async def recorded_requests(
    url: str,
) -> tuple[OpenAICompatEngine, GenerateRequest, GenerateRequest]:
    """The engine, and the router's and planner's requests the LLM policy writes."""
    install_domain(load_domain(DOMAIN))
    assembly = build_policy(Settings(domain=DOMAIN, light=tier(url), heavy=tier(url)))
    await assembly.start()
    engine = assembly.engines[0]
    assert isinstance(engine, OpenAICompatEngine)
    seen: list[GenerateRequest] = []
    generate, stream = engine.generate, engine.stream

    async def generating(request: GenerateRequest) -> Any:
        seen.append(request)
        return await generate(request)

    def streaming(request: GenerateRequest) -> Any:
        seen.append(request)
        return stream(request)

    engine.generate, engine.stream = generating, streaming  # type: ignore[method-assign]
    question = Case("4-wide", 0, False, batch_name(0)).question
    await assembly.policy.route(RouteInput(question=question))
    await assembly.policy.plan(PlanInput(question=question, route=AHEAD_ROUTE))
    engine.generate, engine.stream = generate, stream  # type: ignore[method-assign]
    return engine, seen[0], seen[-1]


def calls(
    engine: OpenAICompatEngine, route: GenerateRequest, plan: GenerateRequest
) -> dict[str, Call]:
    client: Any = engine._client  # the engine's own client: one connection pool for both ways
    mode = engine.structured_mode

    def params(request: GenerateRequest, stream: bool) -> dict[str, Any]:
        return request_params(
            request, model=engine.name, mode=mode, chat=True, prompt_prefix="", stream=stream
        )

    async def typed_route() -> None:
        answer = await client.chat.completions.create(**params(route, False))
        assert answer.choices[0].message.content

    async def typed_plan() -> None:
        opened = client.chat.completions.with_streaming_response.create(**params(plan, True))
        response = await opened.__aenter__()
        try:
            async for _ in sse_data(response.iter_bytes()):
                pass
        finally:
            await response.close()

    async def engine_route() -> None:
        assert (await engine.generate(route)).text

    async def engine_plan() -> None:
        async for _ in engine.stream(plan):
            pass

    return {
        "route engine": engine_route,
        "route typed": typed_route,
        "plan engine": engine_plan,
        "plan typed": typed_plan,
    }


async def cpu_ms(call: Call, n: int) -> float:
    for _ in range(10):  # warm: connections, caches
        await call()
    started = time.process_time()
    for _ in range(n):
        await call()
    return (time.process_time() - started) / n * 1000


async def amain(args: argparse.Namespace) -> None:
    async with serving(IdealShapeModel(route_confidence=0.5), SPEEDS["instant"]) as (url, _):
        engine, route, plan = await recorded_requests(url)
        ways = calls(engine, route, plan)
        rounds: dict[str, list[float]] = {name: [] for name in ways}
        for number in range(args.rounds):
            order = list(ways) if number % 2 == 0 else list(reversed(ways))
            for name in order:
                rounds[name].append(await cpu_ms(ways[name], args.calls))
        await engine.close()
    print(f"CPU ms per call, {args.calls} calls x {args.rounds} rounds (median [min-max]):")
    for name, values in rounds.items():
        print(
            f"  {name:13s} {statistics.median(values):5.2f} [{min(values):.2f}-{max(values):.2f}]"
        )
    for kind in ("route", "plan"):
        ratio = statistics.median(rounds[f"{kind} engine"]) / statistics.median(
            rounds[f"{kind} typed"]
        )
        print(f"  {kind}: engine / typed = {ratio:.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.engine_calls")
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=3)
    asyncio.run(amain(parser.parse_args()))


if __name__ == "__main__":
    main()
