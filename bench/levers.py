"""The latency levers of `bench.dag`, each measured beside the configuration before it.

    python -m bench.levers [--repeats N] [--warmup N] [--latency-ms N] [--model-ms N]

    before        an unsure route, then a plan call, the tools, a respond call
    plan ahead    the planner starts beside the router (`AGENTKEEL_PLAN_AHEAD=always`):
                  the plan stage is gone
    + answer      the plan carries its answer (`Plan.answer`): the respond stage is gone
    + local reads fast reads run as local activities of the workflow's worker
                  (`AGENTKEEL_LOCAL_TOOLS=on`): no task-queue round trip per tool round

Rounds interleave the configurations, so the machine's noise hits all of them alike;
each figure is printed with its ratio to the configuration before it.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import statistics
from collections import defaultdict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from agentkeel.activities.plan_ahead import PlanAhead
from bench.dag_modes import e2e_of_run
from bench.dag_shapes import SHAPES, Shape
from bench.fakes import BenchPlanPolicy, StandInTools
from bench.stack import BenchStack, StackConfig, bench_stack

RunOnce = Callable[[BenchStack, Shape, int], Awaitable[float]]
"""One run of a shape (the `n`th), its client end-to-end ms."""


@dataclass(frozen=True)
class Lever:
    name: str
    plan_ahead: PlanAhead
    write_answer: bool
    local_reads: bool


LEVERS = (
    Lever("before", plan_ahead="off", write_answer=False, local_reads=False),
    Lever("plan ahead", plan_ahead="always", write_answer=False, local_reads=False),
    Lever("+ answer", plan_ahead="always", write_answer=True, local_reads=False),
    Lever("+ local reads", plan_ahead="always", write_answer=True, local_reads=True),
)


async def measure_levers(
    stack: BenchStack, policy: BenchPlanPolicy, run: RunOnce, repeats: int, warmup: int
) -> dict[str, dict[str, list[float]]]:
    """End-to-end ms per shape and lever."""
    samples: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    mode, answers, here = stack.forecast.mode, policy.write_answer, stack.local_offers.tools_here
    try:
        for n in range(warmup + repeats):
            for shape in SHAPES.values():
                for lever in LEVERS:
                    stack.forecast.mode = lever.plan_ahead
                    policy.write_answer = lever.write_answer
                    stack.local_offers.tools_here = lever.local_reads
                    e2e = await run(stack, shape, n)
                    if n >= warmup:
                        samples[shape.name][lever.name].append(e2e)
    finally:
        stack.forecast.mode, policy.write_answer = mode, answers
        stack.local_offers.tools_here = here
    return samples


def report_levers(samples: dict[str, dict[str, list[float]]]) -> None:
    head = f"{'shape':<8}" + "".join(f"{lever.name:>14}{'ratio':>7}" for lever in LEVERS)
    print(
        "\nlevers: median e2e ms, each beside the one before it (ratio = this / before it;"
        "\nbelow 1.00 is a saving)"
    )
    print(head)
    print("-" * len(head))
    for name, by_lever in samples.items():
        medians = [statistics.median(by_lever[lever.name]) for lever in LEVERS]
        cells = [f"{medians[0]:>14.1f}{'':>7}"]
        for before, now in itertools.pairwise(medians):
            cells.append(f"{now:>14.1f}{now / before:>7.2f}")
        print(f"{name:<8}" + "".join(cells))


async def _amain(args: argparse.Namespace) -> None:
    policy = BenchPlanPolicy(model_s=args.model_ms / 1000)
    tools = StandInTools(args.latency_ms / 1000)
    print(
        f"levers: tools {args.latency_ms} ms, model {args.model_ms} ms per call, "
        f"{args.repeats} repeats (+{args.warmup} warm-up)",
        flush=True,
    )
    async with bench_stack(StackConfig.from_env(), policy=policy, stand_ins=tools.all()) as stack:
        samples = await measure_levers(stack, policy, e2e_of_run, args.repeats, args.warmup)
    report_levers(samples)


def main() -> None:
    parser = argparse.ArgumentParser(
        prog="python -m bench.levers", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--latency-ms", type=int, default=100)
    parser.add_argument("--model-ms", type=int, default=0)
    asyncio.run(_amain(parser.parse_args()))


if __name__ == "__main__":
    main()
