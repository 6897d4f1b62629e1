"""Closed-loop load: agentkeel runs per second against the same-shape bare Temporal run.

    python -m bench.load [--runs N] [--in-flight C ...] [--server memory[-tuned]|sqlite[-tuned]]
                         [--sandbox on|off] [--loop uvloop|asyncio ...] [--eager | --no-eager]

A fresh dev server (in memory, or persisting to a SQLite file as `agentkeel up` does;
with or without the queue poll rates and pragmas of `cli.stack.temporal`), in-process
workers, the rules policy, the path cache off and distinct questions over orders and SKUs. For each
load, `AgentWorkflow` and then `bench.bare.BenchBareWorkflow` (its shape, nothing else,
always sandboxed, started plainly, its activations on the SDK's threads: Temporal's
defaults) run C at a time until N have finished; printed: runs/s, p50/p99
latency, lost runs, CPU per run of the workers (this process) and of the dev server, and
agentkeel's runs/s as a ratio of the bare reference's, measured in the same invocation.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from temporalio.worker import Worker

from agentkeel.cli.stack.temporal import SQLITE_PRAGMAS, queue_poll_flags
from agentkeel.examples.shop.carrier import serving as carrier
from agentkeel.examples.shop.rules.policy import RulesPolicy
from agentkeel.schemas.request import AgentRequest, RunOptions
from agentkeel.settings.event_loop import EventLoop
from agentkeel.settings.event_loop import run as run_loop
from agentkeel.workflows.agent import AgentWorkflow
from bench.bare import BARE_WORKFLOW, BenchBareWorkflow, bare_step
from bench.stack import StackConfig, bench_stack


@dataclass
class Load:
    runs_per_s: float
    p50_ms: float
    p99_ms: float
    lost: int
    cpu_ms: float = 0.0
    """CPU per finished run of this process (client and workers)."""
    server_cpu_ms: float = 0.0
    """CPU per finished run of the dev server (a child of this process)."""


def _children_cpu_s() -> float:
    """User + system CPU seconds of this process's live children (the dev server), from /proc."""
    total = 0.0
    tick = os.sysconf("SC_CLK_TCK")
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == os.getpid():  # ppid
            total += (int(fields[11]) + int(fields[12])) / tick  # utime + stime
    return total


def questions() -> Callable[[int], str]:
    kinds = (
        lambda n: f"Where is order {1001 + n % 150}?",
        lambda n: f"Is SKU-{1 + n % 40:05d} in stock?",
        lambda n: f"Can order {1001 + n % 150} be fulfilled from stock?",
    )
    return lambda n: kinds[n % len(kinds)](n)


async def closed_loop(start: Callable[[int], Awaitable[Any]], runs: int, in_flight: int) -> Load:
    latencies: list[float] = []
    lost = 0
    issued = 0

    async def worker() -> None:
        nonlocal issued, lost
        while issued < runs:
            n = issued
            issued += 1
            begun = time.perf_counter()
            try:
                await asyncio.wait_for(start(n), timeout=60)
            except Exception:
                lost += 1
                continue
            latencies.append((time.perf_counter() - begun) * 1000)

    begun, cpu, server_cpu = time.perf_counter(), time.process_time(), _children_cpu_s()
    await asyncio.gather(*(worker() for _ in range(in_flight)))
    elapsed = time.perf_counter() - begun
    done = max(len(latencies), 1)
    ordered = sorted(latencies) or [0.0]
    return Load(
        runs_per_s=len(latencies) / elapsed,
        p50_ms=statistics.median(ordered),
        p99_ms=ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))],
        lost=lost,
        cpu_ms=(time.process_time() - cpu) * 1000 / done,
        server_cpu_ms=(_children_cpu_s() - server_cpu) * 1000 / done,
    )


SERVERS = ("memory", "memory-tuned", "sqlite", "sqlite-tuned")
"""`-tuned`: the queue poll rates of `cli.stack.temporal` (and, on SQLite, its pragmas);
`sqlite-tuned` is the server `agentkeel up` runs."""


def server_args(server: str, folder: Path) -> list[str]:
    args = queue_poll_flags() if server.endswith("-tuned") else []
    if server.startswith("sqlite"):
        args += ["--db-filename", str(folder / "temporal.db")]
    if server == "sqlite-tuned":
        for pragma in SQLITE_PRAGMAS:
            args += ["--sqlite-pragma", pragma]
    return args


async def measure(args: argparse.Namespace, loop: EventLoop) -> None:
    ask = questions()
    with tempfile.TemporaryDirectory() as folder:
        async with (
            carrier(args.carrier_ms) as carrier_url,
            bench_stack(
                StackConfig.from_env(),
                policy=RulesPolicy(),
                stand_ins=[],
                seed_orders=200,
                semantic_cache="off",
                workflow_sandbox=args.sandbox,
                carrier_url=carrier_url,
                dev_server_args=server_args(args.server, Path(folder)),
            ) as stack,
        ):
            client, queue = stack.client, stack.task_queue
            # The seed's tenant (the shop's rows are per tenant): another would find no order.
            tenant = AgentRequest.model_fields["tenant"].default

            async def agent(n: int) -> Any:
                request = AgentRequest(
                    question=ask(n), tenant=tenant, options=RunOptions(use_cache=False)
                )
                # Started as `AgentClient` starts runs: eagerly, the workers being local.
                return await client.execute_workflow(
                    AgentWorkflow.run, request, id=f"load-{uuid.uuid4().hex}", task_queue=queue,
                    request_eager_start=args.eager,
                )  # fmt: skip

            async def bare(n: int) -> Any:
                return await client.execute_workflow(
                    BARE_WORKFLOW, ask(n), id=f"bare-{uuid.uuid4().hex}", task_queue=bare_queue
                )

            bare_queue = f"bare-{uuid.uuid4().hex[:8]}"
            async with (
                Worker(client, task_queue=bare_queue, workflows=[BenchBareWorkflow],
                       activities=[bare_step]),
                Worker(client, task_queue=bare_queue + "-inference", activities=[bare_step]),
            ):  # fmt: skip
                # Warm up both at the first load, long enough that the first row measured is
                # not slower than a second invocation's (caches, imports, the server's pages).
                warm = max(args.in_flight[0], 5)
                await closed_loop(agent, 3 * warm, warm)
                await closed_loop(bare, 3 * warm, warm)
                print(
                    f"server: {args.server}; agentkeel's workflow sandbox: {args.sandbox}; "
                    f"event loop: {loop}; agentkeel's starts eager: {args.eager}; "
                    f"{args.runs} runs per row"
                )
                print(f"{'in flight':>9} {'workflow':>10} {'runs/s':>7} {'p50 ms':>7} "
                      f"{'p99 ms':>7} {'lost':>5} {'x bare':>7} {'cpu ms/run':>10} "
                      f"{'server':>7}")  # fmt: skip
                for load in args.in_flight:
                    mine = await closed_loop(agent, args.runs, load)
                    ref = await closed_loop(bare, args.runs, load)
                    for name, row in (("agentkeel", mine), ("bare", ref)):
                        ratio = row.runs_per_s / ref.runs_per_s
                        print(
                            f"{load:>9} {name:>10} {row.runs_per_s:>7.1f} {row.p50_ms:>7.0f} "
                            f"{row.p99_ms:>7.0f} {row.lost:>5} {ratio:>7.2f} "
                            f"{row.cpu_ms:>10.1f} {row.server_cpu_ms:>7.1f}",
                            flush=True,
                        )
                    print(
                        f"agentkeel/bare at {load} in flight: "
                        f"{mine.runs_per_s / ref.runs_per_s:.2f}"
                    )


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.load", description=__doc__)
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--in-flight", type=int, nargs="+", default=[20])
    parser.add_argument("--server", choices=SERVERS, default="sqlite-tuned")
    parser.add_argument("--carrier-ms", type=int, default=40, help="carrier latency")
    parser.add_argument(
        "--sandbox", choices=["on", "off"], default="off", help="AGENTKEEL_WORKFLOW_SANDBOX"
    )
    parser.add_argument(
        "--eager",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="start agentkeel's runs eagerly, as AgentClient does (the bare reference: never)",
    )
    parser.add_argument(
        "--loop",
        choices=["uvloop", "asyncio"],
        nargs="+",
        default=["asyncio"],
        help="the event loop of the workers and client (AGENTKEEL_EVENT_LOOP); several are "
        "measured one after another, each with its own bare reference",
    )
    args = parser.parse_args()
    for loop in args.loop:
        run_loop(measure(args, loop), loop)


if __name__ == "__main__":
    main()
