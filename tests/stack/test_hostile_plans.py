"""Hostile plans: a seeded generator stands in for a model that writes them, and every run
ends and moves no money the request did not ask for.
"""

from __future__ import annotations

import asyncio
import random
from typing import Any

import asyncpg

from agentkeel.schemas.model_calls import PlanInput, PlanResult, RouteInput, RouteResult
from agentkeel.schemas.plan.model import Plan, PlanStep
from agentkeel.schemas.result import StepStatus
from agentkeel.schemas.route import Route, Tier
from agentkeel.schemas.tools import TOOLS
from tests.support.agent_stack import StackFactory
from tests.support.fakes import FakeScriptedPolicy
from tests.support.hostile import HOSTILE_TEXT, PARALLEL_STARTS, run_to_end, running_on

FUZZ_PLANS = 100


class HostilePlanner(FakeScriptedPolicy):
    """A planner that writes hostile plans (a seeded generator) for whatever is asked."""

    def __init__(self, seed: int) -> None:
        super().__init__([{"steps": [{"id": "s1", "tool": "search_kb", "args": {"query": "x"}}]}])
        self._rng = random.Random(seed)

    async def route(self, request: RouteInput) -> RouteResult:
        intent = self._rng.choice(["policy", "refund", "order_status", "unknown"])
        return RouteResult(
            route=Route(intent=intent, confidence=0.2, tier=Tier.RULES), confident=False
        )

    async def plan(self, request: PlanInput) -> PlanResult:
        self.plan_requests.append(request)
        return PlanResult(plan=hostile_plan(self._rng))


def hostile_plan(rng: random.Random) -> Plan:
    tools = [*TOOLS, "drop_database", "create_refund", ""]
    steps = []
    for i in range(rng.randrange(0, 25)):
        step_id = f"s{i + 1}"
        args: dict[str, Any] = {}
        for _ in range(rng.randrange(0, 4)):
            name = rng.choice(["order_id", "amount_cents", "email", "query", "sku", "x", "reason"])
            args[name] = rng.choice(
                [
                    1001,
                    -5,
                    10**12,
                    "$s1.order_id",
                    f"$s{i + 2}.x",
                    "$item",
                    "'; DROP",
                    None,
                    rng.choice(HOSTILE_TEXT),
                ]
            )
        after = rng.sample([f"s{j}" for j in range(1, i + 3)], k=rng.randrange(0, 2))
        for_each = rng.choice([None, None, "$s1.order_ids", "$s1", f"$s{i + 1}.x"])
        steps.append(
            PlanStep(
                id=step_id,
                tool=rng.choice(tools) or "get_order",
                args=args,
                after=after,
                for_each=for_each,
            )
        )
    return Plan(steps=steps, rationale=rng.choice(HOSTILE_TEXT))


async def test_hostile_plans_all_end_and_move_no_money_unasked(
    make_stack: StackFactory, database_url: str
) -> None:
    planner = HostilePlanner(seed=7)
    # Refunds that need approval are declined at once: nobody approves in this test.
    stack = await make_stack(policy=planner, inference_concurrency=16, approval_timeout="1s")
    slots = asyncio.Semaphore(PARALLEL_STARTS)
    questions = [f"hostile plan {i}" for i in range(FUZZ_PLANS)]

    async def one(question: str) -> tuple[str, Any]:
        async with slots:
            return await run_to_end(
                stack.client,
                stack.task_queue,
                [{"question": question, "tenant": stack.tenant, "options": {"max_replans": 1}}],
            )

    outcomes = await asyncio.gather(*(one(q) for q in questions))
    for question, (outcome, detail) in zip(questions, outcomes, strict=True):
        assert outcome == "completed", (question, detail)
        for step in detail.steps:
            if step.tool == "create_refund" and step.status == StepStatus.SUCCEEDED:
                assert detail.route.intent == "refund", "a refund the request did not ask for"
    assert await running_on(stack.client, stack.task_queue) == []
    conn = await asyncpg.connect(database_url)
    try:
        unasked = await conn.fetchval(
            "SELECT count(*) FROM agent_runs WHERE tenant = $1 AND intent <> 'refund' "
            'AND steps @> \'[{"tool": "create_refund", "status": "succeeded"}]\'',
            stack.tenant,
        )
    finally:
        await conn.close()
    assert unasked == 0
