"""A replan that patches the round before it (`options.replan_patch`): the planner writes
the failed step again, the read that succeeded keeps its result (not run again) and the
step that waited behind the failure runs with the corrected input.

The planner is scripted (`FakeScriptedPolicy`, a fake at the model boundary), and its join
sends a failed round back to planning."""

from __future__ import annotations

import asyncpg

from agentkeel.schemas.model_calls import (
    JoinDecision,
    JoinInput,
    JoinResult,
    PlanInput,
    PlanResult,
)
from agentkeel.schemas.result import StepStatus
from tests.support.agent_stack import StackFactory
from tests.support.fakes import FakeScriptedPolicy


class ReplanningScript(FakeScriptedPolicy):
    """The scripted planner, with a join that replans a round where a step failed; asked
    for a patch, its scripted plan is one."""

    async def plan(self, request: PlanInput) -> PlanResult:
        planned = await super().plan(request)
        return planned.model_copy(update={"patch": request.patch})

    async def join(self, request: JoinInput) -> JoinResult:
        failed = any(s.status == StepStatus.FAILED for s in request.steps)
        again = failed and request.replans < request.max_replans
        return JoinResult(decision=JoinDecision.REPLAN if again else JoinDecision.FINISH)


async def test_a_patch_runs_what_changed_and_keeps_what_succeeded(
    make_stack: StackFactory, db: asyncpg.Pool
) -> None:
    # A shipped order (the stack hands every row to its own tenant when it starts).
    order_id = await db.fetchval("SELECT order_id FROM shipments ORDER BY order_id LIMIT 1")
    first = {
        "steps": [
            {"id": "s1", "tool": "get_order", "args": {"order_id": 999_999}},  # no such order
            {"id": "s2", "tool": "search_kb", "args": {"query": "shipping times"}},
            {
                "id": "s3",
                "tool": "track_shipment",
                "args": {"tracking_number": "$s1.tracking_number"},
            },
        ]
    }
    patch = {"steps": [{"id": "s1", "tool": "get_order", "args": {"order_id": order_id}}]}
    stack = await make_stack(policy=ReplanningScript([first, patch]))
    result = await stack.ask(
        f"where is order {order_id}", options={"replan_patch": True, "use_cache": False}
    )
    assert result.replans == 1
    by_id = {s.id: s for s in result.steps}
    assert set(by_id) == {"s1", "s2", "s3"}, "the round is the patch and what it kept"
    assert all(s.attempt == 1 and s.status is StepStatus.SUCCEEDED for s in by_id.values())
    assert by_id["s1"].args == {"order_id": order_id}
    # The kept read is the round before's (it started before the corrected step).
    assert by_id["s2"].started_at is not None and by_id["s1"].started_at is not None
    assert by_id["s2"].started_at < by_id["s1"].started_at
    assert by_id["s3"].started_at is not None and by_id["s3"].started_at > by_id["s1"].started_at
