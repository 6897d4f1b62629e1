"""Inference benchmark: one command, every figure beside a baseline from the same run.

    python -m bench.inference [--requests N] [--max-tokens N] [--model-dir DIR]
                              [--streaming-only | --no-streaming] [--streams N]

First the streaming overhead (`bench.inference_stream`): the time to first token the SDK
client and the gateway's SSE see, each beside the engine's own on the same server in the
same runs (llama.cpp's server of the test model on the CPU). Then the engine figures:

Answers written by the LLM policy's respond step through the inference worker (a real
Temporal dev server, the respond activity, the token stream to Redis), over the
in-process vLLM engine with the agent's shared system prompt in every request. On
whatever machine it runs: here Gemma 3 270M on the CPU (`llm-cpu` extra); on a GPU,
point --model-dir at a model and pass --dtype auto --no-eager.

  concurrency 1 / 8 / 32   TTFT p50 / p99 (from the client's start to the first token on
                           the stream) and aggregate tokens/s; batching = tokens/s at
                           concurrency N over one-at-a-time (concurrency 1)
  prefix caching off       the same one-at-a-time requests with the engine's prefix cache
                           off: TTFT ratio off/on (the shared prompt prefilled every time)
  n-gram speculation on    one-at-a-time tokens/s with n-gram speculative decoding over
                           the same without it
Each engine configuration loads once (about a minute on 2 CPU cores).
Services: AGENTKEEL_REDIS_URL (default redis://127.0.0.1:6379/0).
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import os
import time
import uuid
from collections.abc import Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import redis.asyncio as aioredis
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

from agentkeel.activities.model_calls import InferenceActivities
from agentkeel.cli.stack.procs import find_temporal_binary
from agentkeel.cli.stack.temporal import queue_poll_flags
from agentkeel.inference.engines.metered import MeteredEngine
from agentkeel.inference.llm.policy import LlmPolicy
from agentkeel.schemas.model_calls import RespondInput
from agentkeel.schemas.result import StepOutcome, StepStatus
from agentkeel.schemas.route import Route, Tier
from agentkeel.schemas.vllm_settings import SpeculativeSettings, VllmSettings
from agentkeel.workers.temporal_client import agentkeel_plugins
from agentkeel.workers.worker import inference_worker
from bench.inference_stream import add_arguments as add_streaming_arguments
from bench.inference_stream import streaming_overhead
from bench.inference_workflow import BenchRespondWorkflow

DEFAULT_MODEL_DIR = Path.home() / ".cache" / "agentkeel" / "models" / "gemma3-270m"
CONCURRENCY = (1, 8, 32)
ORDER = {
    "order_id": 1001,
    "status": "shipped",
    "total_cents": 12999,
    "tracking_number": "TRK0000001001",
    "items": [{"sku": "SKU-00001", "product_name": "Trail running shoes", "quantity": 1}],
}
TRACKING = {
    "tracking_number": "TRK0000001001",
    "carrier": "ParcelPost",
    "status": "in transit",
    "eta": "2026-12-03",
}


@dataclass
class Figures:
    ttft_ms: list[float]
    tokens: int
    wall_s: float

    @property
    def tokens_per_s(self) -> float:
        return self.tokens / self.wall_s if self.wall_s else 0.0

    def p(self, q: float) -> float:
        ordered = sorted(self.ttft_ms)
        return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def respond_input(i: int) -> RespondInput:
    """A distinct question each time; the system prompt and tool results are shared."""
    steps = [
        StepOutcome(id="s1", tool="get_order", status=StepStatus.SUCCEEDED, output=ORDER),
        StepOutcome(id="s2", tool="track_shipment", status=StepStatus.SUCCEEDED, output=TRACKING),
    ]
    route = Route(intent="order_status", confidence=0.9, tier=Tier.LIGHT)
    question = f"Where is my order 1001 and when will it arrive? (request {i})"
    return RespondInput(question=question, route=route, steps=steps)


class Harness:
    """A dev server, an inference worker over one engine, and a workflow worker."""

    def __init__(self, env: WorkflowEnvironment, redis: aioredis.Redis, max_tokens: int) -> None:
        self.env = env
        self.redis = redis
        self.max_tokens = max_tokens
        self.counter = 0

    async def measure(self, engine: MeteredEngine, concurrency: int, requests: int) -> Figures:
        queue = f"bench-inf-{uuid.uuid4().hex[:8]}"
        policy = LlmPolicy(engine, tier=Tier.LIGHT, answer_max_tokens=self.max_tokens)
        activities = InferenceActivities(policy, redis=self.redis)
        async with (
            inference_worker(self.env.client, queue, activities, max_concurrent=concurrency),
            Worker(self.env.client, task_queue=queue + "-wf", workflows=[BenchRespondWorkflow]),
        ):
            await self._one(queue, warm=True)  # worker and workflow code paths warm
            engine.tokens = 0
            pending = list(range(requests))
            ttfts: list[float] = []

            async def lane() -> None:
                while pending:
                    pending.pop()
                    ttfts.append(await self._one(queue))

            started = time.perf_counter()
            await asyncio.gather(*(lane() for _ in range(concurrency)))
            wall = time.perf_counter() - started
        return Figures(ttft_ms=ttfts, tokens=engine.tokens, wall_s=wall)

    async def _one(self, queue: str, *, warm: bool = False) -> float:
        self.counter += 1
        sent = datetime.now(UTC)
        result = await self.env.client.execute_workflow(
            BenchRespondWorkflow.run,
            args=[respond_input(self.counter), queue],
            id=f"bench-inf-{uuid.uuid4().hex[:12]}",
            task_queue=queue + "-wf",
        )
        first = result.first_token_at or datetime.now(UTC)
        return (first - sent).total_seconds() * 1000


def engine_settings(args: argparse.Namespace, **changes: object) -> VllmSettings:
    base = VllmSettings(
        model=str(args.model_dir),
        served_model_name="bench-model",
        dtype=args.dtype,
        enforce_eager=args.eager,
        max_model_len=2048,
        max_num_seqs=max(CONCURRENCY),
        kv_cache_memory_bytes=args.kv_cache_gib << 30 if args.kv_cache_gib else None,
        prepend_bos=True,
    )
    return dataclasses.replace(base, **changes)  # type: ignore[arg-type]


async def with_engine(settings: VllmSettings) -> MeteredEngine:
    from agentkeel.inference.engines.vllm_local import VllmEngine

    engine = MeteredEngine(VllmEngine(settings=settings), count_tokens=True)
    started = time.monotonic()
    await engine.start()
    took = time.monotonic() - started
    print(f"  (loaded: {settings_label(settings)}, {took:.0f} s)", flush=True)
    return engine


def settings_label(settings: VllmSettings) -> str:
    spec = "ngram" if settings.speculative else "no spec"
    prefix = "prefix cache" if settings.enable_prefix_caching else "no prefix cache"
    return f"{prefix}, {spec}"


def row(label: str, figures: Figures, ratio: str = "") -> None:
    print(
        f"{label:<34} {figures.p(0.5):>9.0f} {figures.p(0.99):>9.0f} "
        f"{figures.tokens_per_s:>9.1f}  {ratio}",
        flush=True,
    )


async def run(args: argparse.Namespace) -> None:
    redis_url = os.environ.get("AGENTKEEL_REDIS_URL") or "redis://127.0.0.1:6379/0"
    async with AsyncExitStack() as stack:
        env = await WorkflowEnvironment.start_local(
            dev_server_existing_path=find_temporal_binary(),
            plugins=agentkeel_plugins(),
            dev_server_log_level="error",
            dev_server_extra_args=queue_poll_flags(),
        )
        stack.push_async_callback(env.shutdown)
        redis = aioredis.from_url(redis_url)
        stack.push_async_callback(redis.aclose)
        harness = Harness(env, redis, args.max_tokens)
        n = args.requests
        print(f"{'':<34} {'TTFT p50':>9} {'TTFT p99':>9} {'tok/s':>9}  (ms, ms, aggregate)")

        engine = await with_engine(engine_settings(args))
        by_concurrency: dict[int, Figures] = {}
        for concurrency in CONCURRENCY:
            requests = max(n, concurrency)
            figures = await harness.measure(engine, concurrency, requests)
            by_concurrency[concurrency] = figures
            ratio = ""
            if concurrency > 1:
                speedup = figures.tokens_per_s / by_concurrency[1].tokens_per_s
                ratio = f"batching: {speedup:.1f}x the tokens/s of one-at-a-time"
            row(f"concurrency {concurrency} ({requests} answers)", figures, ratio)
        one_at_a_time = by_concurrency[1]
        await engine.close()

        engine = await with_engine(engine_settings(args, enable_prefix_caching=False))
        figures = await harness.measure(engine, 1, n)
        slower = figures.p(0.5) / one_at_a_time.p(0.5)
        row("prefix caching off (concurrency 1)", figures, f"TTFT p50 off/on: {slower:.2f}x")
        await engine.close()

        engine = await with_engine(engine_settings(args, speculative=SpeculativeSettings()))
        figures = await harness.measure(engine, 1, n)
        speedup = figures.tokens_per_s / one_at_a_time.tokens_per_s
        row("n-gram speculation (concurrency 1)", figures, f"tokens/s on/off: {speedup:.2f}x")
        await engine.close()


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.inference")
    parser.add_argument("--requests", type=int, default=6, help="answers per figure (min: N)")
    parser.add_argument("--max-tokens", type=int, default=32, help="tokens per answer")
    parser.add_argument("--model-dir", type=Path, default=DEFAULT_MODEL_DIR)
    parser.add_argument("--dtype", default="float32", help="float32 on CPUs; auto on GPUs")
    parser.add_argument("--no-eager", dest="eager", action="store_false", help="compile (GPU)")
    parser.add_argument("--kv-cache-gib", type=int, default=2, help="0: vLLM's default sizing")
    streaming = parser.add_mutually_exclusive_group()
    streaming.add_argument("--streaming-only", action="store_true", help="only the TTFT overhead")
    streaming.add_argument("--no-streaming", action="store_true", help="only the engine figures")
    add_streaming_arguments(parser)
    args = parser.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    if not args.no_streaming:
        asyncio.run(streaming_overhead(args))
    if args.streaming_only:
        return
    if args.model_dir == DEFAULT_MODEL_DIR:
        from agentkeel.inference.model_builds.gemma_cpu import build

        build(DEFAULT_MODEL_DIR)
    asyncio.run(run(args))


if __name__ == "__main__":
    main()
