"""Path-cache benchmark: one command, every figure beside a baseline from the same run.

    python -m bench.cache [--repeats N] [--tool-ms N] [--model-ms N]

End to end, through a real Temporal dev server and in-process workers, medians of:
  miss        a question never seen: route, tools, respond, store (and miss/live, the
              baseline of plan: a question whose tools include live tracking)
  plan        the cached plan reused (live tools ran fresh; route and plan skipped)
  canonical   a question read the same (the reading tier) hit inside the workflow
  semantic    a guarded paraphrase hit inside the workflow (when the extra is installed)
  exact/wf    an exact hit inside the workflow (lookup_cache, then the run record)
  exact/fast  an exact hit through the client helper's fast path: one Redis GET
Tools are stand-ins that sleep --tool-ms; the rules policy stands for the model and
sleeps --model-ms per route/respond call (a light model's decode time). Then the
semantic tier's own figures (`bench.cache_semantic`): lookup latency at 1k/10k/100k
entries and hit / false-hit rates on the labelled set in bench/cache_pairs.jsonl; and
lookup p50 at 100k entries in FAISS beside pgvector (`bench.semantic_stores`).
Services: AGENTKEEL_BENCH_ADMIN_DSN / AGENTKEEL_DATABASE_URL, AGENTKEEL_REDIS_URL.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import sys
import time
import uuid
from collections.abc import Awaitable, Callable

from agentkeel.client.agent_client import AgentClient
from agentkeel.examples.shop.rules.policy import RulesPolicy
from agentkeel.inference.policy import TokenSink
from agentkeel.schemas.model_calls import RespondInput, RespondResult, RouteInput, RouteResult
from agentkeel.schemas.request import AgentRequest
from agentkeel.schemas.result import AgentResult, CacheStatus
from agentkeel.workers.cache_assembly import semantic_wanted
from agentkeel.workflows.agent import AgentWorkflow
from bench.fakes import StandInTools
from bench.stack import BenchStack, StackConfig, bench_stack

KB = "What is your return policy for damaged items?"
REWORDED = "Whats your policy on returning damaged items?"
"""Read the same as KB (the reading tier serves it)."""
PARAPHRASE = "Exactly what is your return policy for damaged items?"
"""A word the reading does not fold ("exactly"): only the semantic tier can serve it."""
LIVE = "Where is order 1001?"


class TimedRulesPolicy(RulesPolicy):
    """The rules policy, taking a light model's time per call (a fake at the model boundary)."""

    def __init__(self, model_s: float) -> None:
        super().__init__()
        self._model_s = model_s

    async def route(self, request: RouteInput) -> RouteResult:
        await asyncio.sleep(self._model_s)
        return await super().route(request)

    async def respond(self, request: RespondInput, sink: TokenSink | None = None) -> RespondResult:
        await asyncio.sleep(self._model_s)
        return await super().respond(request, sink)


async def _workflow(stack: BenchStack, question: str, tenant: str) -> tuple[float, AgentResult]:
    started = time.perf_counter()
    result = await stack.client.execute_workflow(
        AgentWorkflow.run,
        AgentRequest(question=question, tenant=tenant),
        id=f"bench-{uuid.uuid4().hex[:12]}",
        task_queue=stack.task_queue,
    )
    return (time.perf_counter() - started) * 1000, result


async def _measure(
    repeats: int, case: Callable[[str], Awaitable[tuple[float, AgentResult]]], expect: CacheStatus
) -> list[float]:
    samples = []
    for _ in range(repeats):
        took, result = await case(f"bench-{uuid.uuid4().hex[:8]}")  # a fresh tenant per sample
        if result.cache != expect:
            raise RuntimeError(f"expected a {expect.value} result, got {result.cache.value}")
        samples.append(took)
    return samples


async def run(args: argparse.Namespace, config: StackConfig) -> None:
    tools = StandInTools(latency_s=args.tool_ms / 1000)
    policy = TimedRulesPolicy(model_s=args.model_ms / 1000)
    async with bench_stack(config, policy=policy, stand_ins=tools.all()) as stack:
        agents = AgentClient.from_settings(stack.client, stack.settings)
        semantic = semantic_wanted(stack.settings)

        async def miss(tenant: str) -> tuple[float, AgentResult]:
            return await _workflow(stack, KB, tenant)

        async def miss_live(tenant: str) -> tuple[float, AgentResult]:
            return await _workflow(stack, LIVE, tenant)

        async def plan(tenant: str) -> tuple[float, AgentResult]:
            await _workflow(stack, LIVE, tenant)
            return await _workflow(stack, LIVE, tenant)

        async def exact_in_workflow(tenant: str) -> tuple[float, AgentResult]:
            await _workflow(stack, KB, tenant)
            return await _workflow(stack, KB, tenant)

        async def semantic_hit(tenant: str) -> tuple[float, AgentResult]:
            await _workflow(stack, KB, tenant)
            return await _workflow(stack, PARAPHRASE, tenant)

        async def canonical_hit(tenant: str) -> tuple[float, AgentResult]:
            await _workflow(stack, KB, tenant)
            return await _workflow(stack, REWORDED, tenant)

        async def exact_fast(tenant: str) -> tuple[float, AgentResult]:
            await _workflow(stack, KB, tenant)
            started = time.perf_counter()
            result = await agents.ask(AgentRequest(question=KB, tenant=tenant))
            return (time.perf_counter() - started) * 1000, result

        cases: list[tuple[str, Callable[[str], Awaitable[tuple[float, AgentResult]]], CacheStatus]]
        cases = [
            ("miss", miss, CacheStatus.MISS),
            ("miss/live", miss_live, CacheStatus.MISS),
            ("plan", plan, CacheStatus.PLAN),
            ("canonical", canonical_hit, CacheStatus.CANONICAL),
            ("exact/wf", exact_in_workflow, CacheStatus.EXACT),
            ("exact/fast", exact_fast, CacheStatus.EXACT),
        ]
        if semantic:
            cases.insert(3, ("semantic", semantic_hit, CacheStatus.SEMANTIC))
        await _measure(2, miss, CacheStatus.MISS)  # warm-up: sandbox, pools, JIT-less paths
        medians = {}
        for name, case, expect in cases:
            medians[name] = statistics.median(await _measure(args.repeats, case, expect))
        await agents.close()
    print(
        f"\nagentkeel path cache, end to end: {args.repeats} samples each, medians; "
        f"stand-in tools {args.tool_ms} ms, model time {args.model_ms} ms per route/respond"
    )
    if not semantic:
        print("  (semantic tier off: install the `semantic` extra to measure it)")
    print(f"  question: {KB!r}; plan reuse on {LIVE!r} (live tracking has no TTL)")
    print(f"{'path':<12}{'median ms':>10}{'its miss / this':>17}")
    for name, value in medians.items():
        # Each hit against the miss of its own question, measured in this run.
        baseline = medians["miss/live" if name in ("plan", "miss/live") else "miss"]
        print(f"{name:<12}{value:>10.1f}{baseline / value:>16.1f}x")


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.cache", description=__doc__)
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--tool-ms", type=int, default=100)
    parser.add_argument("--model-ms", type=int, default=150)
    parser.add_argument("--skip-semantic-tier", action="store_true")
    args = parser.parse_args()
    config = StackConfig.from_env()
    try:
        asyncio.run(run(args, config))
        if not args.skip_semantic_tier:
            # A process of its own: the end-to-end part leaves threads behind (workers, the
            # dev server's client) that would otherwise share the cores with its timings.
            subprocess.run([sys.executable, "-m", "bench.cache_semantic"], check=True)
            # FAISS beside pgvector at 100k entries: the one-machine and the fleet's store.
            subprocess.run([sys.executable, "-m", "bench.semantic_stores"], check=True)
    except KeyboardInterrupt:
        raise SystemExit(130) from None


if __name__ == "__main__":
    main()
