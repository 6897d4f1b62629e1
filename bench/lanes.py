"""Interactive runs beside a background burst, with lanes on and off.

    python -m bench.lanes [--interactive-runs N] [--rounds R] [--in-flight C] [--warm W]
                          [--flood F]
                          [--warmer real|burst] [--warm-parallel P]
                          [--workflow-slots S] [--activity-slots A]
                          [--tuner fixed|resource] [--cpu-target T]
                          [--interactive-share N] [--overflow-cap K]
                          [--gateway process|inline]

A fresh dev server (with the lanes' dynamic config of `cli.stack.temporal`), in-process
workers, the rules policy, the path cache off, a carrier with `--carrier-ms` latency, and
a CPU worker taking S workflow tasks and A activities at once (the worker's defaults, 8
and 200; priority orders only the backlog a worker has not taken, so the workflow tasks
are few: the SDK's 100 takes a burst into the worker).
Interactive runs of four tenants go C at a time until N have finished, three ways, each
once a round for R rounds (3), in this order every round:

- `alone`: nothing else runs (the baseline);
- `burst, lanes on`: at the same moment the cache warmer starts and a flooding tenant
  sends F runs at once through the HTTP gateway (`POST /v1/runs`; `python -m
  agentkeel.gateway` in a process of its own, as deployed, or with `--gateway inline` in
  this one; its quotas lifted so none is refused), all with `schemas.lanes` priorities:
  the gateway starts the tenant's runs past `--interactive-share` in flight in the overflow lane, of
  which `--overflow-cap` do their work at once (`workflows.overflow_gate`). The share's
  default is what each interactive tenant has in flight (C / 4), as a deployment serving
  several tenants sets it (the product's default, 0, suits one serving a single tenant);
- `burst, lanes off`: the same, every run at Temporal's default priority.

The warmer (`--warmer real`, the default) is `CacheWarmerWorkflow` itself, started as its
schedule starts it (`workers.warming_schedule`), renewing W hot questions (W distinct
questions of the `default` tenant, asked once each before the rows) with its
`max_parallel` runs at once (`--warm-parallel`, `WarmInput`'s default). `--warmer burst`
starts W warming runs at once instead: harsher than the warmer ever is.

Printed per row, its rounds pooled (R x N runs: a p99 of 100 runs is their slowest,
which one slow moment moves): the interactive runs' p50 and p99 and p99 as a multiple of
`alone`'s, the median of each interactive tenant's runs and the worst of them as a
multiple of the best, and the flood's median (each flood run timed from the burst's
start); then each round's own p99 ratio, as the spread. Sized for 2 cores; the burst is
drained before the next row.
"""

from __future__ import annotations

import argparse
import asyncio
import time
import uuid

import httpx
from temporalio.client import WorkflowHandle

from agentkeel.client.agent_client import AgentClient
from agentkeel.examples.shop.carrier import serving as carrier
from agentkeel.examples.shop.rules.policy import RulesPolicy
from agentkeel.schemas.result import AgentResult
from agentkeel.schemas.warming import WarmInput
from agentkeel.settings.model import Settings
from bench import lanes_burst as burst
from bench.lanes_rows import TENANTS, Row, print_row
from bench.stack import StackConfig, bench_stack

BURST_ROWS = ("burst, lanes on", "burst, lanes off")


async def _interactive(agents: AgentClient, row: Row, runs: int, in_flight: int) -> None:
    issued = 0

    async def one_at_a_time() -> None:
        nonlocal issued
        while issued < runs:
            n = issued
            issued += 1
            tenant = TENANTS[n % len(TENANTS)]
            begun = time.perf_counter()
            await agents.ask(burst.request_of(n, tenant), coalesce=False)
            took = (time.perf_counter() - begun) * 1000
            row.latencies.append(took)
            row.by_tenant.setdefault(tenant, []).append(took)

    await asyncio.gather(*(one_at_a_time() for _ in range(in_flight)))


async def _flood_latencies(row: Row, handles: burst.Handles, begun: float) -> None:
    """Each flood run's time from the burst's start to its end, as the flood's tenant sees it."""

    async def one(handle: WorkflowHandle[object, AgentResult]) -> None:
        await handle.result()
        row.by_tenant.setdefault(burst.FLOOD_TENANT, []).append(
            (time.perf_counter() - begun) * 1000
        )

    await asyncio.gather(*(one(h) for h in handles))


async def _row(
    agents: AgentClient,
    name: str,
    args: argparse.Namespace,
    gateway: httpx.AsyncClient | None = None,
    lanes: bool = True,
) -> Row:
    """Interactive runs alone (no `gateway`), or beside the warmer and a flood through it."""
    row = Row(name)
    if gateway is None:
        await _interactive(agents, row, args.interactive_runs, args.in_flight)
        return row
    begun = time.perf_counter()
    warmer, flood = await asyncio.gather(
        burst.start_warmer(agents, args, lanes), burst.flood(agents, gateway, args.flood)
    )
    drained = asyncio.create_task(_flood_latencies(row, flood, begun))
    await _interactive(agents, row, args.interactive_runs, args.in_flight)
    await drained
    # Drained before the next row.
    if isinstance(warmer, list):
        await asyncio.gather(*(h.result() for h in warmer))
    else:
        warmed = await warmer.result()
        row.warmed = len(warmed.warmed) + len(warmed.failed)
    return row


async def measure(args: argparse.Namespace) -> None:
    async with (
        carrier(args.carrier_ms) as carrier_url,
        bench_stack(
            StackConfig.from_env(),
            policy=RulesPolicy(),
            stand_ins=[],
            seed_orders=burst.SEEDED_ORDERS,
            semantic_cache="off",
            carrier_url=carrier_url,
            cpu_workflow_slots=args.workflow_slots,
            cpu_activity_slots=args.activity_slots,
            cpu_slot_tuner=args.tuner,
            cpu_slot_target=args.cpu_target,
            overflow_runs_in_flight=args.overflow_cap,
        ) as stack,
    ):
        args.task_queue = stack.task_queue  # where the warmer starts, as its schedule would
        on = AgentClient(stack.client, task_queue=stack.task_queue, version=uuid.uuid4().hex)
        off = AgentClient(
            stack.client, task_queue=stack.task_queue, version=uuid.uuid4().hex, lanes=False
        )
        await _interactive(on, Row("warm-up"), 2 * args.in_flight, args.in_flight)
        if args.warmer == "real":
            await burst.seed_hot_questions(on, args.warm, args.in_flight)
        _header(args)
        pooled = {name: Row(name) for name in ("alone", *BURST_ROWS)}
        ratios: dict[str, list[float]] = {name: [] for name in BURST_ROWS}
        for round_ in range(args.rounds):
            alone = await _row(on, "alone", args)
            pooled["alone"].add(alone)
            for name, agents, lanes in ((BURST_ROWS[0], on, True), (BURST_ROWS[1], off, False)):
                async with burst.gateway(stack, args, lanes) as gateway:
                    row = await _row(agents, name, args, gateway, lanes)
                pooled[name].add(row)
                ratios[name].append(row.p(0.99) / alone.p(0.99))
            each = ", ".join(f"{name} {ratios[name][-1]:.2f}" for name in BURST_ROWS)
            print(f"(round {round_ + 1}: p99 / that round's alone p99: {each})", flush=True)
        print(f"{'row':<17} {'p50':>7} {'p99':>7} {'p99/alone':>9} {'worst/best':>11}   "
              "tenant medians")  # fmt: skip
        for row in pooled.values():
            print_row(row, pooled["alone"])
        print(
            "p99 / alone, one round each: "
            + "; ".join(f"{n} {min(r):.2f}-{max(r):.2f}" for n, r in ratios.items())
        )


def _header(args: argparse.Namespace) -> None:
    warmer = (
        f"the cache warmer renewing {args.warm} questions, {args.warm_parallel} at once"
        if args.warmer == "real"
        else f"{args.warm} warming runs at once"
    )
    print(
        f"{args.interactive_runs} interactive runs a row and round ({args.rounds} rounds), "
        f"{args.in_flight} in flight, of {len(TENANTS)} tenants; burst: {warmer} + "
        f"{args.flood} runs of {burst.FLOOD_TENANT} through the gateway ({args.gateway}; "
        f"interactive share {args.interactive_share or 'off'}, {_cap(args)}); CPU worker "
        f"slots {args.workflow_slots} workflow tasks, {args.activity_slots} activities "
        f"({_tuner(args)}); times in ms"
    )


def _cap(args: argparse.Namespace) -> str:
    if not args.interactive_share:
        return "no overflow lane"
    return f"overflow runs at once: {args.overflow_cap or 'no cap'}"


def _tuner(args: argparse.Namespace) -> str:
    if args.tuner == "fixed":
        return "fixed"
    return f"resource-based: taken while the CPU is under {args.cpu_target:.0%}"


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.lanes", description=__doc__)
    parser.add_argument("--interactive-runs", type=int, default=100, help="per row and round")
    parser.add_argument(
        "--rounds", type=int, default=3, help="each row once a round, alternated; pooled"
    )
    parser.add_argument("--in-flight", type=int, default=20)
    parser.add_argument("--warm", type=int, default=300, help="the warmer's runs")
    parser.add_argument("--flood", type=int, default=100, help="the flooding tenant's runs")
    parser.add_argument(
        "--warmer", choices=("real", "burst"), default="real", help="the warmer, or all at once"
    )
    parser.add_argument(
        "--warm-parallel",
        type=int,
        default=WarmInput().max_parallel,
        help="the warmer's runs at once (WarmInput.max_parallel)",
    )
    parser.add_argument(
        "--workflow-slots", type=int, default=8, help="AGENTKEEL_CPU_WORKFLOW_SLOTS"
    )
    parser.add_argument(
        "--activity-slots", type=int, default=200, help="AGENTKEEL_CPU_ACTIVITY_SLOTS"
    )
    parser.add_argument(
        "--tuner", choices=("fixed", "resource"), default="fixed", help="AGENTKEEL_CPU_SLOT_TUNER"
    )
    parser.add_argument("--cpu-target", type=float, default=0.8, help="AGENTKEEL_CPU_SLOT_TARGET")
    parser.add_argument(
        "--interactive-share",
        type=int,
        default=None,
        help="AGENTKEEL_GATEWAY_INTERACTIVE_RUNS_PER_TENANT (0: every run interactive); "
        "default: what each interactive tenant has in flight (--in-flight / 4), as a "
        "deployment serving several tenants sets it",
    )
    parser.add_argument(
        "--gateway",
        choices=("process", "inline"),
        default="process",
        help="the gateway in its own process (as deployed) or in the bench's",
    )
    parser.add_argument(
        "--overflow-cap",
        type=int,
        default=Settings().overflow_runs_in_flight,
        help="AGENTKEEL_OVERFLOW_RUNS_IN_FLIGHT (0: no cap)",
    )
    parser.add_argument("--carrier-ms", type=int, default=40, help="carrier latency")
    args = parser.parse_args()
    if args.interactive_share is None:
        args.interactive_share = max(1, args.in_flight // len(TENANTS))
    if args.warmer == "real" and not 1 <= args.warm <= 2 * burst.SEEDED_ORDERS:
        parser.error(
            f"--warm: the real warmer renews 1 to {2 * burst.SEEDED_ORDERS} questions here"
        )
    asyncio.run(measure(args))


if __name__ == "__main__":
    main()
