"""A fleet on one machine: two workers of each kind, runs through them, and what losing one
of each kind costs.

    python -m bench.fleet [--runs N] [--in-flight C] [--cpu N] [--inference N]

Starts the local stack of `agentkeel up` without its workers (embedded Postgres and Redis, a
dev server, the carrier service) in a temporary state directory, then N CPU workers and N
inference workers as processes of their own (`cli.stack.fleet`). Runs (half lookups,
half refunds of distinct orders, as `bench.chaos` makes them) go through it twice: once as
they are (the baseline), once while one CPU worker and one inference worker are SIGKILLed a
third of the way in. Printed per pass: completed, failed, stuck, duplicate refunds, p50/p99,
how many runs each worker took part in, and the kill's cost as the ratio of the second
pass's latencies to the baseline's, measured in the same invocation.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import tempfile
import uuid
from pathlib import Path

from temporalio.client import Client

from agentkeel.cli.stack.fleet import WorkerFleet
from agentkeel.cli.stack.local import LocalStack, child_env, embedded_settings
from agentkeel.workers.temporal_client import agentkeel_plugins
from bench.chaos import Pass, _one_pass


async def _kill_one_of_each(fleet: WorkerFleet, after_s: float) -> list[str]:
    await asyncio.sleep(after_s)
    killed = []
    for kind in ("cpu", "inference"):
        worker = fleet.of_kind(kind)[0]
        worker.kill()
        killed.append(f"{after_s:.1f}s SIGKILL {kind} worker {worker.pid}")
    return killed


async def measure(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory() as folder:
        settings = embedded_settings(
            Path(folder) / "stack",
            task_queue=f"fleet-{uuid.uuid4().hex[:8]}",
            metrics_address="off",
            local_policy="off",  # policy steps go to the inference pool
            semantic_cache="off",  # the embedder costs each worker seconds of start
            warm_every_s=0,
            model_concurrency=args.model_cap,
        )
        stack = LocalStack(settings, start_workers=False)
        endpoints = await stack.start()
        fleet = WorkerFleet(settings, child_env(settings, endpoints), Path(folder))
        try:
            fleet.start("cpu", args.cpu)
            fleet.start("inference", args.inference)
            client = await Client.connect(endpoints.temporal_address, plugins=agentkeel_plugins())
            await fleet.wait_polling(client)
            db_url = endpoints.database_url
            await _one_pass(client, settings, db_url, args.in_flight, args.in_flight, "warm")
            started = asyncio.get_running_loop().time()
            base = await _one_pass(client, settings, db_url, args.runs, args.in_flight, "base")
            span_s = asyncio.get_running_loop().time() - started
            kills = asyncio.create_task(_kill_one_of_each(fleet, span_s / 3))
            lost = await _one_pass(client, settings, db_url, args.runs, args.in_flight, "kill")
            killed = await kills
        finally:
            fleet.stop()
            await stack.stop()
    _report(args, base, lost, killed)


def _report(args: argparse.Namespace, base: Pass, lost: Pass, killed: list[str]) -> None:
    print(f"{args.cpu} CPU + {args.inference} inference workers; {args.runs} runs per pass, "
          f"{args.in_flight} in flight; in the second pass:")  # fmt: skip
    for line in killed:
        print(f"  {line}")
    print(f"{'pass':>8} {'completed':>9} {'failed':>6} {'stuck':>5} {'dup refunds':>11} "
          f"{'p50 ms':>7} {'p99 ms':>7}")  # fmt: skip
    for name, row in (("baseline", base), ("kills", lost)):
        print(
            f"{name:>8} {row.completed:>9} {row.failed:>6} {row.stuck:>5} {row.duplicates:>11} "
            f"{row.p(0.5):>7.0f} {row.p(0.99):>7.0f}"
        )
    for name, row in (("baseline", base), ("kills", lost)):
        if row.first_failure:
            print(f"  first failure ({name}): {row.first_failure[:300]}")
    p50 = lost.p(0.5) / max(base.p(0.5), 1e-9)
    p99 = lost.p(0.99) / max(base.p(0.99), 1e-9)
    print(f"kills/baseline latency: p50 {p50:.2f}, p99 {p99:.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.fleet", description=__doc__)
    parser.add_argument("--runs", type=int, default=40)
    parser.add_argument("--in-flight", type=int, default=8)
    parser.add_argument("--cpu", type=int, default=2)
    parser.add_argument("--inference", type=int, default=2)
    parser.add_argument("--model-cap", type=int, default=8, help="AGENTKEEL_MODEL_CONCURRENCY")
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    asyncio.run(measure(parser.parse_args()))


if __name__ == "__main__":
    main()
