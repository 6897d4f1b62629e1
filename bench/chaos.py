"""Chaos: runs through faults on the real local stack, and what the faults cost.

    python -m bench.chaos [--runs N] [--kills K] [--in-flight C] [--seed S]

Starts the local stack of `agentkeel up` (embedded Postgres and Redis, a dev server, the
carrier service and both workers as child processes, supervised) in a temporary state
directory. Then N runs (half lookups, half refunds of distinct orders, each with its own
request id) go through it twice, C at a time: once without faults (the baseline), once
while K SIGKILLs of the CPU worker, one Postgres restart and one SIGKILL of Redis land at
random moments. Printed per pass: completed, failed, stuck (not done 120 s after the
last start), duplicate refunds, p50/p99 latency; and the faults' cost as the ratio of the
faulty pass's latencies to the baseline's, measured in the same invocation.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import signal
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import asyncpg
from temporalio.client import Client

from agentkeel.cli.stack.local import LocalStack, StackEndpoints, embedded_settings
from agentkeel.cli.stack.services import restart_embedded_postgres
from agentkeel.schemas.actor import Actor
from agentkeel.schemas.request import AgentRequest, RunOptions
from agentkeel.schemas.result import StepStatus
from agentkeel.settings.model import Settings
from agentkeel.workers.temporal_client import agentkeel_plugins
from agentkeel.workflows.agent import AgentWorkflow

STUCK_AFTER_S = 120.0
STAFF = Actor(role="staff", name="chaos")


@dataclass
class Pass:
    completed: int = 0
    failed: int = 0
    stuck: int = 0
    duplicates: int = 0
    latencies_ms: list[float] | None = None
    first_failure: str = ""
    """Why the first failed run failed, to say in the report."""

    def p(self, q: float) -> float:
        ordered = sorted(self.latencies_ms or [0.0])
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def _one_pass(
    client: Client, settings: Settings, db_url: str, runs: int, in_flight: int, tag: str
) -> Pass:
    result = Pass(latencies_ms=[])
    db = await asyncpg.connect(db_url)
    try:  # refundable orders (not cancelled), a fresh one for each refund of this pass
        rows = await db.fetch(
            "SELECT order_id FROM orders WHERE status <> 'cancelled' AND total_cents >= 500 "
            "ORDER BY order_id"
        )
    finally:
        await db.close()
    orders = [rows[n % len(rows)]["order_id"] for n in range(runs)]
    issued = 0

    async def one(n: int) -> None:
        order = orders[n]
        question = (
            f"Refund $1.00 for order {order}, chaos {tag}" if n % 2 else f"Where is order {order}?"
        )
        request = AgentRequest(
            question=question,
            tenant="default",  # the seed's rows are the default tenant's
            actor=STAFF,
            request_id=f"{tag}-{n}",
            options=RunOptions(use_cache=False),  # each pass does the same work
        )
        begun = time.perf_counter()
        handle = await client.start_workflow(
            AgentWorkflow.run, request, id=f"chaos-{tag}-{n}", task_queue=settings.task_queue
        )
        try:
            done = await asyncio.wait_for(handle.result(), STUCK_AFTER_S)
        except TimeoutError:
            result.stuck += 1
            return
        except Exception as exc:
            result.failed += 1
            result.first_failure = result.first_failure or f"{type(exc).__name__}: {exc}"
            return
        # A step the plan skips (no tracking number: nothing to track) is a finished run.
        if all(s.status in (StepStatus.SUCCEEDED, StepStatus.SKIPPED) for s in done.steps):
            result.completed += 1
            assert result.latencies_ms is not None
            result.latencies_ms.append((time.perf_counter() - begun) * 1000)
        else:
            result.failed += 1
            result.first_failure = result.first_failure or str(
                [(s.tool, s.status.value, s.error and s.error.type) for s in done.steps]
            )

    async def lane() -> None:
        nonlocal issued
        while issued < runs:
            n, issued = issued, issued + 1
            await one(n)

    await asyncio.gather(*(lane() for _ in range(in_flight)))
    db = await asyncpg.connect(db_url)
    try:
        # Each refund request of a pass names an order of its own: a second refund of that
        # order by the pass's requests (under another key) is a duplicate side effect.
        result.duplicates = await db.fetchval(
            "SELECT coalesce(sum(n - 1), 0) FROM (SELECT count(*) AS n FROM refunds "
            "WHERE idempotency_key LIKE '%/' || $1 || '-%' GROUP BY order_id) per_order",
            tag,
        )
    finally:
        await db.close()
    return result


async def _faults(
    settings: Settings, endpoints: StackEndpoints, kills: int, span_s: float, rng: random.Random
) -> list[str]:
    """SIGKILL the CPU worker `kills` times, restart Postgres once, SIGKILL Redis once, at
    random moments within `span_s`; returns what was done, in order."""
    moments = sorted(
        [(rng.uniform(0.1, span_s), "kill cpu worker") for _ in range(kills)]
        + [(rng.uniform(0.1, span_s), "restart postgres"), (rng.uniform(0.1, span_s), "kill redis")]
    )
    done: list[str] = []
    begun = time.monotonic()
    for at, what in moments:
        await asyncio.sleep(max(0.0, at - (time.monotonic() - begun)))
        if what == "restart postgres":
            await asyncio.to_thread(restart_embedded_postgres, settings.state_dir)
        else:
            name = "worker cpu" if what == "kill cpu worker" else "redis"
            pid = await _running_pid(settings, name)  # after the restart of an earlier kill
            os.kill(pid, signal.SIGKILL)
        done.append(f"{time.monotonic() - begun:5.1f}s {what}")
    return done


async def _running_pid(settings: Settings, name: str, timeout_s: float = 60.0) -> int:
    from agentkeel.cli.stack.watchdog import ChildState, read_status

    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        for child in read_status(settings.state_dir / "status.json"):
            if child.name == name and child.state == ChildState.RUNNING:
                return child.pid
        await asyncio.sleep(0.05)
    raise RuntimeError(f"{name} was not running again within {timeout_s:.0f} s")


async def measure(args: argparse.Namespace) -> None:
    rng = random.Random(args.seed)
    with tempfile.TemporaryDirectory() as folder:
        settings = embedded_settings(
            Path(folder) / "stack",
            task_queue=f"chaos-{uuid.uuid4().hex[:8]}",
            metrics_address="off",  # beside a developer's `agentkeel up` and its ports
        )
        stack = LocalStack(settings, start_workers=True)
        endpoints = await stack.start()
        try:
            client = await Client.connect(endpoints.temporal_address, plugins=agentkeel_plugins())
            db_url = endpoints.database_url
            await _one_pass(client, settings, db_url, args.in_flight, args.in_flight, "warm")
            begun = time.monotonic()
            base = await _one_pass(client, settings, db_url, args.runs, args.in_flight, "base")
            span_s = time.monotonic() - begun  # the faults land while the pass runs
            faults = asyncio.create_task(_faults(settings, endpoints, args.kills, span_s, rng))
            chaos = await _one_pass(client, settings, db_url, args.runs, args.in_flight, "chaos")
            injected = await faults
        finally:
            await stack.stop()
    print(f"{args.runs} runs per pass, {args.in_flight} in flight; faults injected:")
    for line in injected:
        print(f"  {line}")
    print(f"{'pass':>8} {'completed':>9} {'failed':>6} {'stuck':>5} {'dup refunds':>11} "
          f"{'p50 ms':>7} {'p99 ms':>7}")  # fmt: skip
    for name, row in (("baseline", base), ("faults", chaos)):
        print(
            f"{name:>8} {row.completed:>9} {row.failed:>6} {row.stuck:>5} {row.duplicates:>11} "
            f"{row.p(0.5):>7.0f} {row.p(0.99):>7.0f}"
        )
    p50 = chaos.p(0.5) / max(base.p(0.5), 1e-9)
    p99 = chaos.p(0.99) / max(base.p(0.99), 1e-9)
    print(f"faults/baseline latency: p50 {p50:.2f}, p99 {p99:.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.chaos", description=__doc__)
    parser.add_argument("--runs", type=int, default=60)
    parser.add_argument("--kills", type=int, default=2)
    parser.add_argument("--in-flight", type=int, default=10)
    parser.add_argument("--seed", type=int, default=7)
    asyncio.run(measure(parser.parse_args()))


if __name__ == "__main__":
    main()
