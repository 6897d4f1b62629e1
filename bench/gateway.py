"""What the HTTP gateway adds to the time to first token.

Each run is started through `POST /v1/runs`; its first answer token is then awaited two
ways at once, in the same process: through the gateway's SSE stream (`GET .../events`)
and straight from the run's Redis stream (the baseline: what a service reading Redis
itself would see). The difference is the gateway's share of the TTFT.

    python -m bench.gateway [--runs 30]

Services: as `bench.dag` (`AGENTKEEL_BENCH_ADMIN_DSN`, `AGENTKEEL_REDIS_URL`).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import statistics
import time
import uuid

import httpx

from agentkeel.client.agent_client import AgentClient
from agentkeel.client.token_follow import TokenReader
from agentkeel.examples.shop.rules.policy import RulesPolicy
from agentkeel.gateway.app import create_app
from agentkeel.gateway.keys import ApiKeys
from agentkeel.gateway.server import serving
from agentkeel.inference.policy import TokenSink
from agentkeel.schemas.model_calls import RespondInput, RespondResult
from agentkeel.schemas.tokens import TokenEventType, token_stream_key
from agentkeel.settings.connections import redis_client
from agentkeel.settings.ports import free_port
from bench.stack import BenchStack, StackConfig, bench_stack

QUESTION = "What is your return policy for damaged items?"


class FakeStreamingBenchPolicy(RulesPolicy):
    """The rules policy, writing its answer word by word as a model would (model boundary)."""

    name = "fake-streaming-bench"

    async def respond(self, request: RespondInput, sink: TokenSink | None = None) -> RespondResult:
        result = await super().respond(request, None)
        if sink is not None:
            for i, word in enumerate(result.answer.split(" ")):
                await sink(word if i == 0 else " " + word)
                await asyncio.sleep(0.005)
        return result


async def _first_sse_token(http: httpx.AsyncClient, workflow_id: str) -> float:
    async with http.stream("GET", f"/v1/runs/{workflow_id}/events") as response:
        async for line in response.aiter_lines():
            if line == "event: token":
                return time.perf_counter()
    raise RuntimeError(f"{workflow_id}: the stream ended without a token")


async def _first_redis_token(stack: BenchStack, key: str) -> float:
    redis = redis_client(stack.settings.redis_url or "")
    try:
        async for event in TokenReader(redis, key, idle_timeout_s=30).follow():
            if event.type is TokenEventType.TOKEN:
                return time.perf_counter()
    finally:
        await redis.aclose()
    raise RuntimeError(f"{key}: the stream ended without a token")


async def one_run(stack: BenchStack, http: httpx.AsyncClient) -> tuple[float, float]:
    """(direct TTFT, gateway TTFT) of one run, in ms from its POST."""
    body = {"question": QUESTION, "tenant": f"bench-{uuid.uuid4().hex[:8]}"}
    started = time.perf_counter()
    run = (await http.post("/v1/runs", json=body)).json()
    key = token_stream_key(run["workflow_id"], run["run_id"])
    direct, gateway = await asyncio.gather(
        _first_redis_token(stack, key), _first_sse_token(http, run["workflow_id"])
    )
    return (direct - started) * 1000, (gateway - started) * 1000


async def measure(args: argparse.Namespace) -> None:
    async with bench_stack(
        StackConfig.from_env(), policy=FakeStreamingBenchPolicy(), stand_ins=[], token_streams=True
    ) as stack:
        client = AgentClient.from_settings(stack.client, stack.settings)
        app = create_app(client, ApiKeys([]))
        async with serving(app, "127.0.0.1", free_port()) as url:
            async with httpx.AsyncClient(base_url=url, timeout=60, trust_env=False) as http:
                for _ in range(args.warmup):
                    await one_run(stack, http)
                samples = [await one_run(stack, http) for _ in range(args.runs)]
    # The workers' evicted workflow coroutines are finalized now, inside the event loop,
    # not at interpreter exit where LangGraph's cleanup finds no loop and prints tracebacks.
    gc.collect()
    direct = [d for d, _ in samples]
    gateway = [g for _, g in samples]
    added = [g - d for d, g in samples]
    print(f"time to first token from POST /v1/runs, {args.runs} runs (after {args.warmup} warm)")
    print(f"  {'path':<22}{'p50 ms':>9}{'p90 ms':>9}")
    for name, values in (("Redis stream (base)", direct), ("gateway SSE", gateway)):
        p50, p90 = statistics.median(values), statistics.quantiles(values, n=10)[-1]
        print(f"  {name:<22}{p50:>9.1f}{p90:>9.1f}")
    ratio = statistics.median(gateway) / statistics.median(direct)
    print(f"gateway added to TTFT: p50 {statistics.median(added):.1f} ms, ratio {ratio:.2f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--warmup", type=int, default=3)
    asyncio.run(measure(parser.parse_args()))


if __name__ == "__main__":
    main()
