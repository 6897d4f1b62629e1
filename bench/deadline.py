"""Deadline benchmark: how often runs meet deadlines of 25 %, 50 % and 100 % of the
unconstrained median, and what each trade saved.

    python -m bench.deadline [--planner-ms 500] [--light-ms 120] [--repeats 3]

Unsure routes to the heavy tier, planned by a stand-in planner (`--planner-ms`; the light
tier, when a deadline picks it, `--light-ms`), tools stand-ins at their
real names with `bench.speculation.TOOL_MS` latencies, each recorded by the workers as in
production (so the runs plan from measured latencies). The plan has five steps, two of
them `optional`, and the requests cap concurrency at 1, so raising the cap and leaving
steps out both have something to win. Needs the local Postgres and Redis.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
import uuid
from collections import defaultdict
from typing import Any

import redis.asyncio as aioredis

from agentkeel.activities.latency import LatencyBook, timed_tool
from agentkeel.schemas.model_calls import PlanInput, PlanResult, RouteInput, RouteResult
from agentkeel.schemas.plan.model import Plan
from agentkeel.schemas.request import AgentRequest, RunOptions
from agentkeel.schemas.result import AgentResult
from agentkeel.schemas.route import Route, Tier
from agentkeel.workers.stand_ins import activity_name
from agentkeel.workflows.agent import AgentWorkflow
from bench.speculation import HeavyPlanner, SlowTools
from bench.stack import StackConfig, bench_stack

QUESTION = "What about order 1001 of ada@example.com?"
PLAN = Plan.model_validate(
    {
        "steps": [
            {"id": "s1", "tool": "get_order", "args": {"order_id": 1001}},
            {
                "id": "s2",
                "tool": "track_shipment",
                "args": {"tracking_number": "$s1.tracking_number"},
            },
            {"id": "s3", "tool": "search_kb", "args": {"query": "delivery"}, "optional": True},
            {"id": "s4", "tool": "check_inventory", "args": {"sku": "SKU-00001"}, "optional": True},
            {"id": "s5", "tool": "find_customer", "args": {"email": "ada@example.com"}},
        ]
    }
)


class Planner(HeavyPlanner):
    """Routes unsure to the heavy tier, which plans in `planner_s`; the light tier, when a
    deadline picks it, in `light_s` (a stand-in for two model sizes)."""

    def __init__(self, planner_s: float, light_s: float) -> None:
        super().__init__(planner_s)
        self.light_s = light_s

    async def route(self, request: RouteInput) -> RouteResult:
        route = Route(intent="bench", confidence=0.2, tier=Tier.HEAVY, reason="unsure")
        return RouteResult(route=route, confident=False)

    async def plan(self, request: PlanInput) -> PlanResult:
        light = request.route.tier is Tier.LIGHT
        await asyncio.sleep(self.light_s if light else self.planner_s)
        return PlanResult(plan=PLAN, tier=request.route.tier)


async def _one(client: Any, queue: str, deadline_ms: int | None) -> tuple[float, AgentResult]:
    options = RunOptions(
        use_cache=False, speculate=False, max_concurrency=1, deadline_ms=deadline_ms
    )
    started = time.perf_counter()
    result: AgentResult = await client.execute_workflow(
        AgentWorkflow.run,
        AgentRequest(question=QUESTION, options=options),
        id=f"deadline-{uuid.uuid4().hex[:12]}",
        task_queue=queue,
    )
    return (time.perf_counter() - started) * 1000, result


async def amain(args: argparse.Namespace, config: StackConfig) -> None:
    redis = aioredis.from_url(config.redis_url)
    book = LatencyBook(redis)
    tools = [timed_tool(t, activity_name(t), book) for t in SlowTools(0.0).all()]
    try:
        async with bench_stack(
            config, policy=Planner(args.planner_ms / 1000, args.light_ms / 1000), stand_ins=tools
        ) as stack:
            full = [
                (await _one(stack.client, stack.task_queue, None))[1] for _ in range(args.repeats)
            ]
            median = statistics.median(r.timings_ms.total for r in full)
            print(f"unconstrained median {median:.0f} ms (run total), {args.repeats} repeats")
            print(
                f"{'deadline':>9} {'budget ms':>10} {'met':>5} {'median ms':>10}  "
                "decisions (median ms saved)"
            )
            for share in (0.25, 0.5, 1.0):
                budget = round(median * share)
                met, totals = 0, []
                saved: dict[str, list[float]] = defaultdict(list)
                for _ in range(args.repeats):
                    _, result = await _one(stack.client, stack.task_queue, budget)
                    assert result.deadline is not None
                    met += result.deadline.met
                    totals.append(result.timings_ms.total)
                    for decision in result.deadline.decisions:
                        saved[decision.kind.value].append(decision.saved_ms)
                made = (
                    ", ".join(
                        f"{kind} x{len(v)} ({statistics.median(v):.0f})"
                        for kind, v in saved.items()
                    )
                    or "none"
                )
                print(
                    f"{share:>8.0%} {budget:>10} {met}/{args.repeats:<3} "
                    f"{statistics.median(totals):>10.0f}  {made}"
                )
    finally:
        await redis.aclose()


def main() -> None:
    parser = argparse.ArgumentParser(
        prog="python -m bench.deadline", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--planner-ms", type=int, default=500, help="the heavy tier's plan")
    parser.add_argument("--light-ms", type=int, default=120, help="the light tier's plan")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    asyncio.run(amain(args, StackConfig.from_env()))


if __name__ == "__main__":
    main()
