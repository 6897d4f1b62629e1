"""Speculative tool execution benchmark: unsure routes, a heavy planner of a given latency.

    python -m bench.speculation [--planner-ms 500] [--repeats 5]

Every question is routed unsure, so a stand-in heavy planner (sleeping `--planner-ms`)
writes the plan, while the reads the question names (predicted by the path cache's lookup,
which is on, as in production; every question carries a ticket of its own so the cache
never answers it) start at the run's first moment. Tools are
stand-ins at their real activity names with 100-300 ms latencies (`TOOL_MS`). Two kinds of
question, each run with speculation on and off (`options.speculate`), alternating:

* predicted   — the question names the order, customer and SKU the plan's first steps read;
* mispredicted — the question names an order, whose read is speculated, but the plan
  never reads it (a wasted call, cancelled when the plan arrives);
* unpredicted — the question names nothing the reading can predict.

Prints the median end-to-end time of each, the on/off ratio, the hit rate and the wasted
(unused) speculative calls; its last line is `speculation on/off: predicted R1,
unpredicted R2`. Needs the local Postgres and Redis, as `bench.dag` does.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
import uuid
from typing import Any

from pydantic import BaseModel

from agentkeel.examples.shop.rules.policy import RulesPolicy
from agentkeel.schemas.model_calls import PlanInput, PlanResult, RouteInput, RouteResult
from agentkeel.schemas.plan.model import Plan
from agentkeel.schemas.request import AgentRequest, RunOptions
from agentkeel.schemas.result import AgentResult
from agentkeel.schemas.route import Route, Tier
from agentkeel.workflows.agent import AgentWorkflow
from bench.fakes import StandInTools
from bench.stack import StackConfig, bench_stack

TOOL_MS = {
    "get_order": 300,
    "find_customer": 250,
    "check_inventory": 200,
    "list_orders": 150,
    "track_shipment": 100,
    "search_kb": 150,
}
PREDICTED = "Where is order 1001 of ada@example.com, and is SKU-00001 in stock?"
PREDICTED_PLAN = Plan.model_validate(
    {
        "steps": [
            {"id": "s1", "tool": "get_order", "args": {"order_id": 1001}},
            {
                "id": "s2",
                "tool": "track_shipment",
                "args": {"tracking_number": "$s1.tracking_number"},
            },
            {"id": "s3", "tool": "find_customer", "args": {"email": "ada@example.com"}},
            {"id": "s4", "tool": "list_orders", "args": {"customer_id": "$s3.customer_id"}},
            {"id": "s5", "tool": "check_inventory", "args": {"sku": "SKU-00001"}},
        ]
    }
)
MISPREDICTED = "Can order 1001 still be returned under the returns policy?"
"""Names an order, so its read is speculated, but the plan only reads the policy."""
UNPREDICTED = "How long do parcels usually take, and what is the returns policy?"
UNPREDICTED_PLAN = Plan.model_validate(
    {
        "steps": [
            {"id": "s1", "tool": "search_kb", "args": {"query": "delivery times"}},
            {"id": "s2", "tool": "search_kb", "args": {"query": "returns policy"}},
        ]
    }
)


class HeavyPlanner(RulesPolicy):
    """Routes every question unsure; plans after `planner_s` (a stand-in heavy model)."""

    name = "fake-heavy-planner"

    def __init__(self, planner_s: float) -> None:
        super().__init__()
        self.planner_s = planner_s

    async def route(self, request: RouteInput) -> RouteResult:
        route = Route(intent="bench", confidence=0.2, tier=Tier.RULES, reason="unsure")
        return RouteResult(route=route, confident=False)

    async def plan(self, request: PlanInput) -> PlanResult:
        await asyncio.sleep(self.planner_s)
        plan = PREDICTED_PLAN if request.question.startswith(PREDICTED) else UNPREDICTED_PLAN
        # (MISPREDICTED gets the policy-only plan too: the speculated order read is wasted.)
        return PlanResult(plan=plan)


class SlowTools(StandInTools):
    """Stand-ins whose latency depends on the tool (`TOOL_MS`)."""

    async def _call(self, tool: str, args: BaseModel) -> Any:
        self.latency_s = TOOL_MS[tool] / 1000
        return await super()._call(tool, args)


async def _one(
    client: Any, queue: str, question: str, speculate: bool
) -> tuple[float, AgentResult]:
    # The path cache is on, as in production (its lookup is what predicts the reads); a
    # ticket of its own makes every question new to it.
    request = AgentRequest(
        question=f"{question} (ticket {uuid.uuid4().hex[:8]})",
        options=RunOptions(speculate=speculate),
    )
    started = time.perf_counter()
    result: AgentResult = await client.execute_workflow(
        AgentWorkflow.run, request, id=f"spec-{uuid.uuid4().hex[:12]}", task_queue=queue
    )
    return (time.perf_counter() - started) * 1000, result


async def amain(args: argparse.Namespace, config: StackConfig) -> None:
    tools = SlowTools(0.0)
    async with bench_stack(
        config, policy=HeavyPlanner(args.planner_ms / 1000), stand_ins=tools.all()
    ) as stack:
        await _one(stack.client, stack.task_queue, PREDICTED, True)  # warm-up
        ratios: dict[str, float] = {}
        print(
            f"planner {args.planner_ms} ms, tools {min(TOOL_MS.values())}-"
            f"{max(TOOL_MS.values())} ms, {args.repeats} repeats"
        )
        print(
            f"{'question':<12} {'off ms':>8} {'on ms':>8} {'on/off':>7} {'hit rate':>9} "
            f"{'wasted/run':>11} {'saved ms':>9}"
        )
        cases = (
            ("predicted", PREDICTED),
            ("mispredicted", MISPREDICTED),
            ("unpredicted", UNPREDICTED),
        )
        for label, question in cases:
            times: dict[bool, list[float]] = {True: [], False: []}
            hits = calls = 0
            saved: list[float] = []
            for _ in range(args.repeats):
                for speculate in (False, True):
                    ms, result = await _one(stack.client, stack.task_queue, question, speculate)
                    times[speculate].append(ms)
                    if speculate and result.speculation is not None:
                        hits += result.speculation.hits
                        calls += len(result.speculation.calls)
                        saved.append(result.timings_ms.speculation_saved)
            off, on = statistics.median(times[False]), statistics.median(times[True])
            ratios[label] = on / off
            rate = f"{hits / calls:.2f}" if calls else "-"
            wasted = (calls - hits) / args.repeats
            print(
                f"{label:<12} {off:>8.0f} {on:>8.0f} {on / off:>7.2f} {rate:>9} {wasted:>11.1f} "
                f"{statistics.median(saved) if saved else 0:>9.0f}"
            )
        print(
            f"speculation on/off: predicted {ratios['predicted']:.2f}, "
            f"unpredicted {ratios['unpredicted']:.2f}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(
        prog="python -m bench.speculation", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--planner-ms", type=int, default=500)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    asyncio.run(amain(args, StackConfig.from_env()))


if __name__ == "__main__":
    main()
