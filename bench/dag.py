"""DAG scheduler benchmark: the same plans run three ways, one table.

    python -m bench.dag [--repeats N] [--latency-ms N] [--warmup N]

* workflow   — `AgentWorkflow` on a real Temporal dev server with in-process workers,
  stand-in tools that sleep `--latency-ms`, and `max_concurrency=8`.
* sequential — the same workflow with `max_concurrency=1`: exactly one tool call at a
  time in topological order (a ReAct-style loop), with identical orchestration.
* limit      — plain asyncio, no orchestration: each step awaits its dependencies, then
  sleeps; the physical limit is critical-path steps x latency. `sched` is the same with
  `workflows.scheduler.DagScheduler` dispatching in-process.

Needs the local Postgres (a throwaway database is created on `AGENTKEEL_BENCH_ADMIN_DSN`,
default `postgresql://postgres@127.0.0.1:5432/postgres`, unless `AGENTKEEL_DATABASE_URL`
names one to use) and Redis (`AGENTKEEL_REDIS_URL`, default `redis://127.0.0.1:6379/0`).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import time
import uuid
from collections import defaultdict
from datetime import UTC, datetime
from typing import Any

from bench.fakes import BenchPlanPolicy, StandInTools, stand_in_result
from bench.plans import SHAPES, Shape, question_for
from bench.stack import BenchStack, StackConfig, bench_stack
from schemas.request import AgentRequest, RunOptions
from schemas.result import StepOutcome, StepStatus
from schemas.tools import TOOLS
from workflows.agent import AgentWorkflow
from workflows.execute import describe_error
from workflows.scheduler import DagScheduler, SchedulerLimits, ToolCall

DEFAULT_ADMIN_DSN = "postgresql://postgres@127.0.0.1:5432/postgres"
DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/0"
WIDE_CONCURRENCY = 8
"""The run cap of the workflow mode: as wide as the widest shape."""


def _ms_since(start: float) -> float:
    return (time.perf_counter() - start) * 1000


async def run_direct(shape: Shape, latency_s: float) -> float:
    """The physical limit: no scheduler, each step a task awaiting its dependencies."""
    tasks: dict[str, asyncio.Task[None]] = {}

    async def step(deps: list[asyncio.Task[None]]) -> None:
        await asyncio.gather(*deps)
        await asyncio.sleep(latency_s)

    start = time.perf_counter()
    async with asyncio.TaskGroup() as group:
        for s in shape.plan.steps:  # plan order is topological
            tasks[s.id] = group.create_task(step([tasks[d] for d in shape.deps[s.id]]))
    return _ms_since(start)


async def run_scheduler(shape: Shape, latency_s: float) -> float:
    """The production scheduler with an in-process dispatch: scheduler cost without Temporal."""

    async def dispatch(call: ToolCall) -> Any:
        await asyncio.sleep(latency_s)
        return stand_in_result(call.tool, call.args).model_dump(mode="json")

    scheduler = DagScheduler(
        shape.plan,
        TOOLS,
        dispatch=dispatch,
        now=lambda: datetime.now(UTC),
        describe_error=describe_error,
        limits=SchedulerLimits(max_concurrency=WIDE_CONCURRENCY),
    )
    start = time.perf_counter()
    outcomes = await scheduler.run()
    elapsed = _ms_since(start)
    _check_succeeded(shape, outcomes)
    return elapsed


async def run_workflow(
    stack: BenchStack, shape: Shape, n: int, max_concurrency: int
) -> tuple[float, float, int]:
    """(tools layer ms in workflow time, client end-to-end ms, peak steps in flight)."""
    request = AgentRequest(
        question=question_for(shape, n),
        tenant="bench",
        options=RunOptions(use_cache=False, max_concurrency=max_concurrency),
    )
    start = time.perf_counter()
    handle = await stack.client.start_workflow(
        AgentWorkflow.run,
        request,
        id=f"bench-{shape.name}-{uuid.uuid4().hex[:12]}",
        task_queue=stack.task_queue,
    )
    result = await handle.result()
    e2e = _ms_since(start)
    _check_succeeded(shape, result.steps)
    return result.timings_ms.tools, e2e, _peak_overlap(result.steps)


def _check_succeeded(shape: Shape, outcomes: list[StepOutcome]) -> None:
    bad = [o for o in outcomes if o.status is not StepStatus.SUCCEEDED]
    if len(outcomes) != shape.steps or bad:
        raise RuntimeError(f"{shape.name}: not every step succeeded: {bad or outcomes}")


def _peak_overlap(outcomes: list[StepOutcome]) -> int:
    """Most steps whose recorded [start, finish) intervals overlap (ends sort before starts)."""
    events = []
    for o in outcomes:
        assert o.started_at is not None and o.finished_at is not None
        events += [(o.started_at, 1), (o.finished_at, -1)]
    current = peak = 0
    for _, delta in sorted(events, key=lambda e: (e[0], e[1])):
        current += delta
        peak = max(peak, current)
    return peak


Samples = dict[str, dict[str, list[float]]]


async def measure(stack: BenchStack, repeats: int, warmup: int, latency_s: float) -> Samples:
    """Rounds over every shape and mode, interleaved so machine noise hits all alike."""
    samples: Samples = defaultdict(lambda: defaultdict(list))
    for n in range(warmup + repeats):
        for shape in SHAPES.values():
            row = {
                "limit": await run_direct(shape, latency_s),
                "sched": await run_scheduler(shape, latency_s),
            }
            row["wf_tools"], row["wf_e2e"], wf_peak = await run_workflow(
                stack, shape, n, WIDE_CONCURRENCY
            )
            row["seq_tools"], row["seq_e2e"], seq_peak = await run_workflow(stack, shape, n, 1)
            row["wf_peak"], row["seq_peak"] = wf_peak, seq_peak
            if n >= warmup:
                for key, value in row.items():
                    samples[shape.name][key].append(value)
        label = "warm-up" if n < warmup else "round"
        print(f"  {label} {n + 1 - (0 if n < warmup else warmup)} done", flush=True)
    return samples


def report(samples: Samples, latency_ms: float) -> None:
    med = {s: {k: statistics.median(v) for k, v in d.items()} for s, d in samples.items()}
    head = (
        f"{'shape':<8}{'steps':>6}{'cp':>4}{'expect':>8}{'limit':>8}{'sched':>8}"
        f"{'wf tools':>10}{'wf e2e':>9}{'seq tools':>11}{'seq e2e':>9}{'peak wf/seq':>13}"
    )
    print("\nmedian ms (expect = critical-path steps x latency, machine-independent)")
    print(head)
    print("-" * len(head))
    for name, m in med.items():
        shape = SHAPES[name]
        peaks = f"{max(samples[name]['wf_peak']):.0f}/{max(samples[name]['seq_peak']):.0f}"
        print(
            f"{name:<8}{shape.steps:>6}{shape.critical_path_steps:>4}"
            f"{shape.critical_path_steps * latency_ms:>8.0f}{m['limit']:>8.1f}{m['sched']:>8.1f}"
            f"{m['wf_tools']:>10.1f}{m['wf_e2e']:>9.1f}{m['seq_tools']:>11.1f}"
            f"{m['seq_e2e']:>9.1f}{peaks:>13}"
        )
    head = (
        f"{'shape':<8}{'wf/limit tools':>16}{'wf/limit e2e':>14}{'seq/wf tools':>14}"
        f"{'seq/wf e2e':>12}{'wf ovh/cp step':>16}{'seq ovh/step':>14}{'wf e2e-tools':>14}"
    )
    print("\nratios, and overhead in ms (ovh = tools layer beyond the steps' sleep)")
    print(head)
    print("-" * len(head))
    for name, m in med.items():
        shape = SHAPES[name]
        cp = shape.critical_path_steps
        print(
            f"{name:<8}{m['wf_tools'] / m['limit']:>16.2f}{m['wf_e2e'] / m['limit']:>14.2f}"
            f"{m['seq_tools'] / m['wf_tools']:>14.2f}{m['seq_e2e'] / m['wf_e2e']:>12.2f}"
            f"{(m['wf_tools'] - cp * latency_ms) / cp:>16.1f}"
            f"{(m['seq_tools'] - shape.steps * latency_ms) / shape.steps:>14.1f}"
            f"{m['wf_e2e'] - m['wf_tools']:>14.1f}"
        )


async def amain(args: argparse.Namespace, config: StackConfig) -> None:
    latency_s = args.latency_ms / 1000
    tools = StandInTools(latency_s)
    print(
        f"agentkeel DAG benchmark: per-tool latency {args.latency_ms} ms, "
        f"{args.repeats} repeats per shape per mode (+{args.warmup} warm-up rounds), medians.\n"
        f"  workflow:   AgentWorkflow, real Temporal dev server, max_concurrency="
        f"{WIDE_CONCURRENCY}, use_cache=False\n"
        "  sequential: the same AgentWorkflow with max_concurrency=1 (one tool call at a time,\n"
        "              topological order, like a ReAct loop): identical orchestration overhead,\n"
        "              only the parallelism differs\n"
        "  limit:      plain asyncio tasks, no orchestration (sched: DagScheduler in-process)\n"
        "  tools = execute layer in workflow time (timings_ms.tools); "
        "e2e = client start_workflow → result",
        flush=True,
    )
    async with bench_stack(config, policy=BenchPlanPolicy(), stand_ins=tools.all()) as stack:
        samples = await measure(stack, args.repeats, args.warmup, latency_s)
    report(samples, args.latency_ms)


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.dag", description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=7, help="measured runs per shape and mode")
    parser.add_argument("--latency-ms", type=int, default=100, help="sleep of every stand-in tool")
    parser.add_argument("--warmup", type=int, default=2, help="unmeasured rounds first")
    args = parser.parse_args()
    if args.repeats < 1 or args.latency_ms < 0 or args.warmup < 0:
        parser.error("--repeats must be >= 1; --latency-ms and --warmup >= 0")
    config = StackConfig(
        admin_dsn=os.environ.get("AGENTKEEL_BENCH_ADMIN_DSN") or DEFAULT_ADMIN_DSN,
        redis_url=os.environ.get("AGENTKEEL_REDIS_URL") or DEFAULT_REDIS_URL,
        database_url=os.environ.get("AGENTKEEL_DATABASE_URL") or None,
    )
    try:
        asyncio.run(amain(args, config))
    except KeyboardInterrupt:
        raise SystemExit(130) from None


if __name__ == "__main__":
    main()
