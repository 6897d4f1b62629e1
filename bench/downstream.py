"""Downstream protection benchmark: caps, shared reads and merged calls, each on and off.

    python -m bench.downstream [--runs N] [--in-flight 20 50] [--carrier-ms MS]

Closed-loop load of `AgentWorkflow` (rules policy, path cache off) over overlapping
questions: parcels of ten shipped orders and stock of a few orders' items, so concurrent
runs ask the downstreams the same things. One row per configuration and load:

* requests/run — carrier requests per run (the carrier stand-in's `/stats`);
* peak        — the most carrier requests in flight at once;
* p50 / p99   — end-to-end latency of a run, and its ratio to the `off` row of that load.

Last, the merge window's price and gain on the tracking activity alone: a lone call's
latency, and how many carrier requests 20 calls arriving 1 ms apart make, for windows of
0, 2, 5 and 10 ms.

Needs the local Postgres and Redis, as `bench.dag` does.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import statistics
import time
import uuid
from dataclasses import dataclass
from typing import Any

import httpx

from agentkeel.activities.downstream.guard import Downstreams, guarded_tool
from agentkeel.activities.downstream.limiter import DownstreamLimiter
from agentkeel.examples.shop.carrier import serving as carrier
from agentkeel.examples.shop.rules.policy import RulesPolicy
from agentkeel.examples.shop.tools import TRACK_SHIPMENT, TrackShipmentInput
from agentkeel.schemas.request import AgentRequest, RunOptions
from agentkeel.workflows.agent import AgentWorkflow
from bench.stack import StackConfig, bench_stack
from tests.support.shop_tools import ShopActivities


def _config(cap: str, share: str, window_ms: float) -> dict[str, Any]:
    return {
        "downstream": {"carrier_concurrency": cap},
        "share_reads": share,
        "merge_window_ms": window_ms,
    }


CONFIGS: dict[str, dict[str, Any]] = {
    "off": _config("1000", "off", 0),
    "caps": _config("4", "off", 0),
    "share": _config("1000", "on", 0),
    "merge": _config("1000", "off", 2),
    "all": _config("4", "on", 2),
}
SHIPPED_ORDERS = 10


@dataclass
class Row:
    config: str
    in_flight: int
    requests_per_run: float
    peak: int
    p50_ms: float
    p99_ms: float


def questions(order_ids: list[int]) -> itertools.cycle[str]:
    asked = [f"Where is order {o}?" for o in order_ids]
    asked += [f"Can order {o} be fulfilled from stock?" for o in order_ids[:3]]
    return itertools.cycle(asked)


async def run_load(
    client: Any, queue: str, asked: itertools.cycle[str], runs: int, in_flight: int
) -> list[float]:
    latencies: list[float] = []
    started = 0
    tenant = f"bench-{uuid.uuid4().hex[:8]}"

    async def worker() -> None:
        nonlocal started
        while started < runs:
            started += 1
            request = AgentRequest(
                question=next(asked), tenant=tenant, options=RunOptions(use_cache=False)
            )
            begun = time.perf_counter()
            await client.execute_workflow(
                AgentWorkflow.run, request, id=f"bench-{uuid.uuid4().hex}", task_queue=queue
            )
            latencies.append((time.perf_counter() - begun) * 1000)

    await asyncio.gather(*(worker() for _ in range(in_flight)))
    return latencies


async def stats(url: str) -> dict[str, int]:
    async with httpx.AsyncClient() as http:
        answer: dict[str, int] = (await http.get(f"{url}/stats")).json()
        return answer


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def measure(args: argparse.Namespace) -> None:
    config = StackConfig.from_env()
    rows: list[Row] = []
    for load in args.in_flight:
        for name, overrides in CONFIGS.items():
            async with carrier(args.carrier_ms) as url, bench_stack(
                config, policy=RulesPolicy(), stand_ins=[], seed_orders=200, carrier_url=url,
                semantic_cache="off", **overrides,
            ) as stack:  # fmt: skip
                order_ids = await shipped_orders(stack.settings.database_url)
                asked = questions(order_ids)
                await run_load(stack.client, stack.task_queue, asked, 4, 2)  # warm up
                before = await stats(url)
                latencies = await run_load(stack.client, stack.task_queue, asked, args.runs, load)
                after = await stats(url)
            rows.append(
                Row(
                    config=name,
                    in_flight=load,
                    requests_per_run=(after["requests"] - before["requests"]) / args.runs,
                    peak=after["peak_concurrency"],
                    p50_ms=statistics.median(latencies),
                    p99_ms=pct(latencies, 0.99),
                )
            )
            print_row(rows[-1], baseline=next(r for r in rows if r.in_flight == load))
    await merge_window_cost(args, config)


async def shipped_orders(database_url: str | None) -> list[int]:
    import asyncpg

    conn = await asyncpg.connect(database_url)
    try:
        rows = await conn.fetch(
            "SELECT order_id FROM shipments ORDER BY order_id LIMIT $1", SHIPPED_ORDERS
        )
    finally:
        await conn.close()
    return [int(r["order_id"]) for r in rows]


def print_row(row: Row, baseline: Row) -> None:
    if row is baseline:
        print(
            f"\n{'in flight':>9} {'config':>6} {'requests/run':>12} {'peak':>5} "
            f"{'p50 ms':>8} {'x off':>6} {'p99 ms':>8} {'x off':>6}"
        )
    print(
        f"{row.in_flight:>9} {row.config:>6} {row.requests_per_run:>12.2f} {row.peak:>5} "
        f"{row.p50_ms:>8.0f} {row.p50_ms / baseline.p50_ms:>6.2f} "
        f"{row.p99_ms:>8.0f} {row.p99_ms / baseline.p99_ms:>6.2f}",
        flush=True,
    )


async def merge_window_cost(args: argparse.Namespace, config: StackConfig) -> None:
    """The window's price and gain, on the tool activity alone (no Temporal in between):
    a lone call's latency, and the carrier requests that 20 calls arriving 1 ms apart make."""
    print("\nmerge window: lone-call latency against carrier requests for 20 calls 1 ms apart")
    base: float | None = None
    async with carrier(args.carrier_ms) as url, httpx.AsyncClient() as http:
        import asyncpg

        pool = await asyncpg.create_pool(config.admin_dsn, min_size=1, max_size=2)
        try:
            tools = ShopActivities(pool, http, url)
            for window_ms in (0.0, 2.0, 5.0, 10.0):
                downstreams = Downstreams(
                    limiter=DownstreamLimiter(None, {}),
                    shared=None,
                    merge_window_s=window_ms / 1000,
                )
                track = guarded_tool(
                    tools.track_shipment,
                    TRACK_SHIPMENT,
                    downstreams,
                    tools.batch_calls()[TRACK_SHIPMENT.name],
                )
                lone: list[float] = []
                for n in range(30):
                    begun = time.perf_counter()
                    await track(TrackShipmentInput(tracking_number=f"TRK{n:010d}"))
                    lone.append((time.perf_counter() - begun) * 1000)
                before = (await stats(url))["requests"]

                await asyncio.gather(*(_arriving(track, n) for n in range(20)))
                requests = (await stats(url))["requests"] - before
                p50 = statistics.median(lone)
                base = base or p50
                print(
                    f"  window {window_ms:>4.0f} ms: lone call p50 {p50:6.1f} ms "
                    f"({p50 / base:.2f}x of no window), 20 calls -> {requests} requests"
                )
        finally:
            await pool.close()


async def _arriving(track: Any, n: int) -> None:
    await asyncio.sleep(n / 1000)
    await track(TrackShipmentInput(tracking_number=f"TRK{n:010d}"))


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.downstream", description=__doc__)
    parser.add_argument("--runs", type=int, default=60, help="runs per configuration and load")
    parser.add_argument("--in-flight", type=int, nargs="+", default=[20, 50])
    parser.add_argument("--carrier-ms", type=int, default=40, help="carrier latency")
    asyncio.run(measure(parser.parse_args()))


if __name__ == "__main__":
    main()
