"""DAG scheduler benchmark: the same plans run four ways, one table.

    python -m bench.dag [--repeats N] [--latency-ms N] [--warmup N] [--model-ms N]
                        [--policy-steps inference|cpu] [--tracing]

* workflow      — `AgentWorkflow` on a real Temporal dev server with in-process workers,
  stand-in tools that sleep `--latency-ms`, and `max_concurrency=8`.
* one-at-a-time — the same workflow with `max_concurrency=1`: one tool call at a time in
  topological order, with identical orchestration (one route and one plan call).
* react         — `bench.react.BenchReactWorkflow`, a ReAct-style loop on the same worker:
  per step one model turn (`plan` activity, "think") then that one tool ("act"), then
  `respond` once, as the workflow does.
* limit         — plain asyncio, no orchestration: each step awaits its dependencies, then
  sleeps; the physical limit is critical-path steps x latency. `sched` is the same with
  `workflows.dag.scheduler.DagScheduler` dispatching in-process.

Model calls go to a real inference worker whose policy is a fake at the model boundary
(`bench.fakes.BenchPlanPolicy`): each costs a real activity round trip but no model
compute, unless `--model-ms` makes every route and plan call (so every think turn) sleep.

Needs the local Postgres (a throwaway database is created on `AGENTKEEL_BENCH_ADMIN_DSN`,
default `postgresql://postgres@127.0.0.1:5432/postgres`, unless `AGENTKEEL_DATABASE_URL`
names one to use) and Redis (`AGENTKEEL_REDIS_URL`, default `redis://127.0.0.1:6379/0`).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
from collections import defaultdict
from collections.abc import Sequence

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

from agentkeel.settings.tracing import configure_tracing
from bench.dag_modes import (
    LAYERS,
    WIDE_CONCURRENCY,
    e2e_of_run,
    run_direct,
    run_react,
    run_scheduler,
    run_workflow,
)
from bench.dag_shapes import SHAPES
from bench.fakes import BenchPlanPolicy, StandInTools
from bench.levers import measure_levers, report_levers
from bench.stack import BenchStack, StackConfig, bench_stack

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
            row["wf_tools"], row["wf_loop"], row["wf_e2e"], row["wf_peak"] = await run_workflow(
                stack, shape, n, WIDE_CONCURRENCY
            )
            row["one_tools"], _, row["one_e2e"], row["one_peak"] = await run_workflow(
                stack, shape, n, 1
            )
            row["re_loop"], row["re_think"], row["re_e2e"], row["re_peak"] = await run_react(
                stack, shape, n
            )
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
        f"{'wf tools':>10}{'wf e2e':>9}{'one tools':>11}{'one e2e':>9}"
        f"{'react loop':>12}{'react e2e':>11}{'peak wf/one/react':>19}"
    )
    print("\nmedian ms (expect = critical-path steps x latency, machine-independent)")
    print(head)
    print("-" * len(head))
    for name, m in med.items():
        shape = SHAPES[name]
        peaks = "/".join(f"{max(samples[name][k]):.0f}" for k in ("wf_peak", "one_peak", "re_peak"))
        print(
            f"{name:<8}{shape.steps:>6}{shape.critical_path_steps:>4}"
            f"{shape.critical_path_steps * latency_ms:>8.0f}{m['limit']:>8.1f}{m['sched']:>8.1f}"
            f"{m['wf_tools']:>10.1f}{m['wf_e2e']:>9.1f}{m['one_tools']:>11.1f}"
            f"{m['one_e2e']:>9.1f}{m['re_loop']:>12.1f}{m['re_e2e']:>11.1f}{peaks:>19}"
        )
    head = (
        f"{'shape':<8}{'wf/limit tools':>16}{'wf/limit e2e':>14}{'one/wf tools':>14}"
        f"{'one/wf e2e':>12}{'react/wf e2e':>14}{'react/wf loop':>15}"
        f"{'wf ovh/cp step':>16}{'one ovh/step':>14}{'react ovh/step':>16}{'think/turn':>12}"
    )
    print(
        "\nratios, and overhead in ms (ovh = tools layer, or react loop, beyond the steps' sleep;"
        "\nwf loop = route + plan + tools in workflow time; think/turn = one react model turn)"
    )
    print(head)
    print("-" * len(head))
    for name, m in med.items():
        shape = SHAPES[name]
        cp, n = shape.critical_path_steps, shape.steps
        print(
            f"{name:<8}{m['wf_tools'] / m['limit']:>16.2f}{m['wf_e2e'] / m['limit']:>14.2f}"
            f"{m['one_tools'] / m['wf_tools']:>14.2f}{m['one_e2e'] / m['wf_e2e']:>12.2f}"
            f"{m['re_e2e'] / m['wf_e2e']:>14.2f}{m['re_loop'] / m['wf_loop']:>15.2f}"
            f"{(m['wf_tools'] - cp * latency_ms) / cp:>16.1f}"
            f"{(m['one_tools'] - n * latency_ms) / n:>14.1f}"
            f"{(m['re_loop'] - n * latency_ms) / n:>16.1f}{m['re_think'] / n:>12.1f}"
        )


def report_fixed(samples: Samples, latency_ms: float, warmup: int) -> None:
    """Where the workflow's time beyond the tools' sleep goes, per shape (medians)."""
    head = (
        f"{'shape':<8}{'e2e':>8}{'limit':>8}{'e2e/limit':>10}{'fixed':>8}{'route':>8}"
        f"{'plan':>8}{'respond':>9}{'outside':>9}{'tools ovh':>10}{'per cp step':>12}"
    )
    print(
        "\nwhere the workflow's time goes (medians, ms): fixed = e2e - tools layer;"
        "\noutside = e2e - the run's own total (client start and result, first and last"
        "\nworkflow task); tools ovh = tools layer - critical path x latency"
    )
    print(head)
    print("-" * len(head))
    for name, d in samples.items():
        shape = SHAPES[name]
        cp = shape.critical_path_steps
        runs = LAYERS[(name, WIDE_CONCURRENCY)][warmup:]
        layer = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
        e2e, tools, limit = (statistics.median(d[k]) for k in ("wf_e2e", "wf_tools", "limit"))
        ovh = tools - cp * latency_ms
        print(
            f"{name:<8}{e2e:>8.1f}{limit:>8.1f}{e2e / limit:>10.2f}{e2e - tools:>8.1f}"
            f"{layer['route']:>8.1f}{layer['plan']:>8.1f}{layer['respond']:>9.1f}"
            f"{layer['outside']:>9.1f}{ovh:>10.1f}{ovh / cp:>12.1f}"
        )


_MODEL_CALLS = {
    "inference": "  model calls:         a real inference worker round trip each, fake policy at\n"
    "                       the model boundary (BenchPlanPolicy): no compute beyond --model-ms\n",
    "cpu": "  model calls:         the fake policy (BenchPlanPolicy) served by the CPU worker as\n"
    "                       local activities, as the rules policy is (react still hops)\n",
}


class DroppedSpans(SpanExporter):
    """An exporter that sends nothing: the spans' cost up to the wire, and no further."""

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        return SpanExportResult.SUCCESS


async def amain(args: argparse.Namespace, config: StackConfig) -> None:
    latency_s = args.latency_ms / 1000
    tools = StandInTools(latency_s)
    print(
        f"agentkeel DAG benchmark: per-tool latency {args.latency_ms} ms, model time "
        f"{args.model_ms} ms per route/plan call, {args.repeats} repeats per shape per mode "
        f"(+{args.warmup} warm-up rounds), medians.\n"
        f"  workflow (wf):       AgentWorkflow, real Temporal dev server, max_concurrency="
        f"{WIDE_CONCURRENCY}, use_cache=False\n"
        "  one-at-a-time (one): the same AgentWorkflow with max_concurrency=1: identical\n"
        "                       orchestration (1 route + 1 plan call), only parallelism differs\n"
        "  react:               BenchReactWorkflow: per step one model turn (plan activity) then\n"
        "                       that one tool, in topological order; then respond, as wf does\n"
        + _MODEL_CALLS[args.policy_steps]
        + "  limit:               plain asyncio tasks, no orchestration (sched: DagScheduler "
        "in-process)\n"
        "  tools = execute layer in workflow time (timings_ms.tools); react loop = think + act\n"
        "  turns in workflow time; e2e = client start_workflow → result",
        flush=True,
    )
    policy = BenchPlanPolicy(model_s=args.model_ms / 1000)
    async with bench_stack(
        config,
        policy=policy,
        stand_ins=tools.all(),
        policy_on_cpu_worker=args.policy_steps == "cpu",
    ) as stack:
        samples = await measure(stack, args.repeats, args.warmup, latency_s)
        levers = await measure_levers(stack, policy, e2e_of_run, args.repeats, args.warmup)
    report(samples, args.latency_ms)
    report_fixed(samples, args.latency_ms, args.warmup)
    report_levers(levers)


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.dag", description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=7, help="measured runs per shape and mode")
    parser.add_argument("--latency-ms", type=int, default=100, help="sleep of every stand-in tool")
    parser.add_argument("--warmup", type=int, default=2, help="unmeasured rounds first")
    parser.add_argument(
        "--model-ms", type=int, default=0, help="sleep of every route and plan (think) call"
    )
    parser.add_argument(
        "--tracing",
        action="store_true",
        help="trace every run (spans made and batched as for a collector, then dropped)",
    )
    parser.add_argument(
        "--policy-steps",
        choices=["inference", "cpu"],
        default="inference",
        help="route/plan/respond on the inference pool (model-backed) or on the CPU worker "
        "(as the rules policy runs)",
    )
    args = parser.parse_args()
    if args.repeats < 1 or min(args.latency_ms, args.warmup, args.model_ms) < 0:
        parser.error("--repeats must be >= 1; --latency-ms, --warmup and --model-ms >= 0")
    config = StackConfig.from_env()
    if args.tracing:
        configure_tracing("agentkeel-bench", processor=BatchSpanProcessor(DroppedSpans()))
    try:
        asyncio.run(amain(args, config))
    except KeyboardInterrupt:
        raise SystemExit(130) from None


if __name__ == "__main__":
    main()
