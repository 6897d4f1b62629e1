"""agentkeel beside the durable agents on Temporal: the same plans, one dev server, one table.

    python -m bench.peers [--repeats N] [--warmup N] [--shapes chain,diamond,...]
                          [--model-ms 0,100] [--sandbox both|off] [--quick]

Needs the `bench` extra (`pip install -e '.[bench]'`), the local Postgres and Redis (as
`bench.dag`: `AGENTKEEL_BENCH_ADMIN_DSN`, `AGENTKEEL_REDIS_URL`).

* agentkeel      — `AgentWorkflow` on the bench stack (`bench.peer_agentkeel`): routed unsure,
  planned, the plan's tools, respond, the run record; its own worker configuration.
* pydantic-ai    — an `Agent` with Pydantic AI's `TemporalDurability` (`bench.peer_pydantic_ai`).
* openai-agents  — Temporal's OpenAI Agents integration (`bench.peer_openai_agents`).
* bare           — plain Temporal activities with agentkeel's hops (`bench.peer_bare`).

Every system runs the four shapes of `bench.plans` with its own tool activities, each
sleeping `--latency-ms`, and a fake model at the boundary that sleeps `--model-ms` per
call and emits the best rounds its framework allows (`bench.peer_fakes`). Each peer runs
on a sandboxed and an unsandboxed worker. Every run is checked to have made exactly the
tool calls of its shape. Runs are interleaved (round by round, shape by shape, system by
system) so the machine's noise falls on all alike. The last line is one JSON object:
model time -> shape -> system -> unsandboxed median end-to-end ms.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from temporalio.client import Client, WorkflowHandle
from temporalio.worker import Worker

from agentkeel.schemas.request import AgentRequest, RunOptions
from agentkeel.workflows.agent import AgentWorkflow
from bench import peer_bare, peer_openai_agents, peer_pydantic_ai
from bench import peer_fakes as fakes
from bench.dag_shapes import SHAPES, Shape, question_for
from bench.peer_agentkeel import LoggedStandIns, PeerBenchPolicy
from bench.peer_report import (
    AGENTKEEL,
    Results,
    history_stats,
    label_of,
    print_table,
    print_verdict,
    summary,
)
from bench.stack import StackConfig, bench_stack

RUN_TIMEOUT = timedelta(seconds=60)
"""Execution timeout of every run: a broken system fails the benchmark instead of hanging."""
WIDE_CONCURRENCY = 8
"""agentkeel's run cap: as wide as the widest shape (the peers have none)."""

Start = Callable[[str, str], Awaitable[WorkflowHandle[Any, Any]]]
"""(question, workflow id) -> the started run."""


@dataclass(frozen=True)
class Variant:
    """One system on one worker configuration."""

    system: str
    sandboxed: bool | None
    """None: agentkeel on its own worker configuration."""
    start: Start

    @property
    def label(self) -> str:
        return label_of(self.system, self.sandboxed)


class WrongToolCalls(RuntimeError):
    """A run finished without making exactly the tool calls its shape needs."""


async def run_once(variant: Variant, shape: Shape, n: int) -> tuple[float, WorkflowHandle]:
    """One run, end to end as the client sees it (start to result), checked for its calls."""
    workflow_id = f"peers-{variant.label.replace(' ', '-')}-{shape.name}-{uuid.uuid4().hex[:10]}"
    start = time.perf_counter()
    handle = await variant.start(question_for(shape, n), workflow_id)
    await handle.result()
    e2e = (time.perf_counter() - start) * 1000
    check_calls(shape, workflow_id)
    return e2e, handle


def check_calls(shape: Shape, workflow_id: str) -> None:
    """Raises unless the run made exactly the tool calls of `shape`, with their arguments."""
    made = fakes.canonical(fakes.TOOL_LOG.of(workflow_id))
    if made != fakes.expected_calls(shape):
        raise WrongToolCalls(f"{workflow_id} ({shape.name}) called {made}")


def _peer_start(client: Client, run: Any, task_queue: str) -> Start:
    async def start(question: str, workflow_id: str) -> WorkflowHandle[Any, Any]:
        return await client.start_workflow(
            run, question, id=workflow_id, task_queue=task_queue, execution_timeout=RUN_TIMEOUT
        )

    return start


@asynccontextmanager
async def peer_stack(
    config: StackConfig, sandbox_modes: list[bool]
) -> AsyncIterator[list[Variant]]:
    """One dev server (the bench stack's) with agentkeel's workers and every peer's."""
    async with (
        bench_stack(config, policy=PeerBenchPolicy(), stand_ins=LoggedStandIns().all()) as stack,
        AsyncExitStack() as workers,
    ):
        request_options = RunOptions(use_cache=False, max_concurrency=WIDE_CONCURRENCY)

        async def start_agentkeel(question: str, workflow_id: str) -> WorkflowHandle[Any, Any]:
            request = AgentRequest(question=question, tenant="bench", options=request_options)
            return await stack.client.start_workflow(
                AgentWorkflow.run,
                request,
                id=workflow_id,
                task_queue=stack.task_queue,
                execution_timeout=RUN_TIMEOUT,
            )

        variants = [Variant(AGENTKEEL, None, start_agentkeel)]
        target, namespace = stack.client.service_client.config.target_host, stack.client.namespace
        # Each system's own client: its plugin sets its data converter there. Bare Temporal
        # gets the default one.
        clients = {
            "pydantic-ai": await peer_pydantic_ai.client_for(target, namespace),
            "openai-agents": await peer_openai_agents.client_for(target, namespace),
            "bare": await Client.connect(target, namespace=namespace),
        }
        runs = {
            "pydantic-ai": peer_pydantic_ai.BenchPydanticAiWorkflow.run,
            "openai-agents": peer_openai_agents.BenchOpenAiAgentsWorkflow.run,
            "bare": peer_bare.BenchBarePlanWorkflow.run,
        }
        makers: dict[str, Callable[[Client, str, bool], list[Worker]]] = {
            "pydantic-ai": lambda c, q, s: [peer_pydantic_ai.worker(c, q, sandboxed=s)],
            "openai-agents": lambda c, q, s: [peer_openai_agents.worker(c, q, sandboxed=s)],
            "bare": lambda c, q, s: peer_bare.workers(c, q, sandboxed=s),
        }
        for sandboxed in sandbox_modes:
            for system, client in clients.items():
                queue = f"peers-{system}-{'sbx' if sandboxed else 'unsbx'}-{uuid.uuid4().hex[:6]}"
                for worker in makers[system](client, queue, sandboxed):
                    await workers.enter_async_context(worker)
                variants.append(
                    Variant(system, sandboxed, _peer_start(client, runs[system], queue))
                )
        yield variants


async def measure(
    variants: list[Variant],
    shapes: list[Shape],
    model_times: list[int],
    repeats: int,
    warmup: int,
) -> Results:
    results = Results()
    for model_ms in model_times:
        fakes.KNOBS.model_s = model_ms / 1000
        for n in range(warmup + repeats):
            for shape in shapes:
                for variant in variants:
                    e2e, handle = await run_once(variant, shape, n)
                    if n < warmup:
                        continue
                    cell = results.cell(model_ms, shape.name, variant.label)
                    cell.e2e_ms.append(e2e)
                    if cell.history is None:
                        cell.history = await history_stats(handle)
            kind = "warm-up" if n < warmup else "round"
            number = n + 1 if n < warmup else n + 1 - warmup
            print(f"  model {model_ms} ms: {kind} {number} done", flush=True)
    return results


async def amain(args: argparse.Namespace) -> None:
    shapes = [SHAPES[name] for name in args.shapes]
    sandbox_modes = [False, True] if args.sandbox == "both" else [False]
    fakes.KNOBS.tool_s = args.latency_ms / 1000
    print(
        f"agentkeel beside its peers on Temporal: tools of {args.latency_ms} ms, model time "
        f"{', '.join(map(str, args.model_ms))} ms per model call, {args.repeats} repeats "
        f"(+{args.warmup} warm-up), interleaved.\n"
        "  e2e = client start_workflow -> result; history counted from one run per cell;\n"
        "  act tasks = activities scheduled, model = those that were model calls (act tasks -\n"
        "  tool steps), wf tasks = workflow tasks completed, local = local activities;\n"
        "  x agentkeel = median / agentkeel's median in the same invocation",
        flush=True,
    )
    async with peer_stack(StackConfig.from_env(), sandbox_modes) as variants:
        results = await measure(variants, shapes, args.model_ms, args.repeats, args.warmup)
    labels = [v.label for v in variants]
    names = [s.name for s in shapes]
    for model_ms in args.model_ms:
        print_table(results, model_ms, {s.name: s.steps for s in shapes}, labels)
    print_verdict(results, args.model_ms, names)
    print(json.dumps(summary(results, args.model_ms, names)))


def _csv(kind: Callable[[str], Any]) -> Callable[[str], list[Any]]:
    return lambda text: [kind(part) for part in text.split(",") if part]


def main() -> None:
    parser = argparse.ArgumentParser(
        prog="python -m bench.peers", description=(__doc__ or "").split("\n")[0]
    )
    parser.add_argument("--repeats", type=int, default=7, help="measured runs per cell")
    parser.add_argument("--warmup", type=int, default=1, help="unmeasured rounds first")
    parser.add_argument("--shapes", type=_csv(str), default=list(SHAPES), help="comma-separated")
    parser.add_argument("--model-ms", type=_csv(int), default=[0, 100], help="comma-separated")
    parser.add_argument("--latency-ms", type=int, default=100, help="sleep of every tool call")
    parser.add_argument("--sandbox", choices=["both", "off"], default="both", help="peer workers")
    parser.add_argument(
        "--quick", action="store_true", help="a fast check: diamond, 2 repeats, 1 warm-up"
    )
    args = parser.parse_args()
    if args.quick:
        args.shapes, args.repeats, args.warmup = ["diamond"], 2, 1
    unknown = set(args.shapes) - set(SHAPES)
    if unknown or args.repeats < 1 or args.warmup < 0 or min(args.model_ms, default=-1) < 0:
        parser.error(
            f"--shapes from {', '.join(SHAPES)} (unknown: {', '.join(unknown) or 'none'}); "
            "--repeats >= 1, --warmup >= 0, --model-ms >= 0"
        )
    try:
        asyncio.run(amain(args))
    except KeyboardInterrupt:
        raise SystemExit(130) from None


if __name__ == "__main__":
    main()
