"""The effect rules on the real stack: keys by what an effect is, effects from the router's
reading only, approvers checked as identities by the workflow."""

from __future__ import annotations

import asyncio
from typing import Any

import asyncpg
import pytest
from temporalio.client import WorkflowUpdateFailedError
from temporalio.exceptions import ApplicationError

from agentkeel.schemas import names
from agentkeel.schemas.actor import Actor
from agentkeel.schemas.approvals import ApprovalDecision
from agentkeel.schemas.errors import APPROVER_NOT_ALLOWED
from agentkeel.schemas.model_calls import (
    JoinDecision,
    JoinInput,
    JoinResult,
    PlanInput,
    PlanResult,
    RouteInput,
    RouteResult,
)
from agentkeel.schemas.plan.model import Plan
from agentkeel.schemas.result import AgentResult, StepStatus
from agentkeel.schemas.route import Route, Tier
from tests.support.agent_stack import StackFactory
from tests.support.fakes import FakeScriptedPolicy
from tests.support.refunds import RefundScript, refundable_order, until_awaiting


async def refunds_of(db: asyncpg.Pool, order_id: int) -> list[int]:
    rows = await db.fetch(
        "SELECT amount_cents FROM refunds WHERE order_id = $1 AND idempotency_key IS NOT NULL "
        "ORDER BY amount_cents",
        order_id,
    )
    return [r["amount_cents"] for r in rows]


def refund(step_id: str, order_id: int, cents: int) -> dict[str, Any]:
    args = {"order_id": order_id, "amount_cents": cents, "reason": "asked"}
    return {"id": step_id, "tool": "create_refund", "args": args}


class ReplanAfterFailure(RefundScript):
    """Asks for another round whenever a step failed (as a model judging the join would)."""

    async def join(self, request: JoinInput) -> JoinResult:
        failed = any(s.status is StepStatus.FAILED for s in request.steps)
        if failed and request.replans == 0:
            return JoinResult(decision=JoinDecision.REPLAN, reason="a step failed")
        return JoinResult(decision=JoinDecision.FINISH)


async def test_a_replan_that_renames_the_refund_step_refunds_once(
    make_stack: StackFactory, db: asyncpg.Pool
) -> None:
    order_id, _ = await refundable_order(db, at_least_cents=1_000)
    missing = {"id": "x", "tool": "get_order", "args": {"order_id": 99_999_999}}
    rounds = [
        {"steps": [refund("r1", order_id, 500), missing]},
        {"steps": [refund("refund_again", order_id, 500)]},  # no request id: the run's chain
    ]
    stack = await make_stack(policy=ReplanAfterFailure(rounds))
    result: AgentResult = await (await stack.start(f"refund $5 on order {order_id}")).result()
    assert [s.id for s in result.steps if s.tool == "create_refund"] == ["r1", "refund_again"]
    assert await refunds_of(db, order_id) == [500]


async def test_a_resend_whose_plan_orders_two_refunds_otherwise_refunds_each_once(
    make_stack: StackFactory, db: asyncpg.Pool
) -> None:
    order_id, _ = await refundable_order(db, at_least_cents=2_000)
    first = {"steps": [refund("a", order_id, 500), refund("b", order_id, 700)]}
    reordered = {"steps": [refund("b", order_id, 700), refund("a", order_id, 500)]}
    stack = await make_stack(policy=RefundScript([first, reordered]))
    question = f"refund $5 and $7 on order {order_id}"
    for _ in range(2):  # the same request, sent again by a caller's retry
        await (await stack.start(question, request_id="desk-7")).result()
    assert await refunds_of(db, order_id) == [500, 700]


class RelabellingPlanner(FakeScriptedPolicy):
    """The router reads a question about an order; the planner calls it a refund."""

    async def route(self, request: RouteInput) -> RouteResult:
        route = Route(intent="order_status", confidence=0.3, tier=Tier.RULES, reason="status")
        return RouteResult(route=route, confident=False)

    async def plan(self, request: PlanInput) -> PlanResult:
        result = await super().plan(request)
        relabelled = Route(intent="refund", confidence=0.99, tier=Tier.RULES, reason="mine")
        return result.model_copy(update={"route": relabelled})


async def test_the_planners_own_label_never_allows_a_side_effect(
    make_stack: StackFactory, db: asyncpg.Pool
) -> None:
    order_id, _ = await refundable_order(db, at_least_cents=1_000)
    plan = Plan.model_validate({"steps": [refund("r", order_id, 500)]})
    stack = await make_stack(policy=RelabellingPlanner([plan]))
    # Order and amount are in the words, so only the router's reading decides.
    result: AgentResult = await (
        await stack.start(f"where is order {order_id}? it cost $5")
    ).result()
    assert not any(s.status is StepStatus.SUCCEEDED for s in result.steps)
    assert await refunds_of(db, order_id) == []


async def test_the_workflow_checks_who_approves(make_stack: StackFactory, db: asyncpg.Pool) -> None:
    order_id, owner = await refundable_order(db, at_least_cents=15_000)
    plan = {"steps": [refund("r", order_id, 15_000)]}
    stack = await make_stack(policy=RefundScript([plan]))
    handle = await stack.start(
        f"refund $150 on order {order_id}", actor=Actor(role="staff", name="ann")
    )
    await until_awaiting(handle)
    refused = [
        Actor(role="staff", name="\u0430nn"),  # a Cyrillic a: still ann
        Actor(role="staff", name="a\u200bnn"),  # a zero-width space: still ann
        Actor(role="customer", subject=str(owner), name="pat"),  # not a role that approves
    ]
    for by in refused:
        with pytest.raises(WorkflowUpdateFailedError) as rejected:
            await handle.execute_update(
                names.APPROVE_UPDATE,
                ApprovalDecision(approved=True, approver="x", by=by, approval_id=1),
            )
        cause = rejected.value.cause
        assert isinstance(cause, ApplicationError), cause
        assert (cause.type, cause.non_retryable) == (APPROVER_NOT_ALLOWED, True)
    assert await refunds_of(db, order_id) == []
    bob = Actor(role="staff", name="bob")
    await handle.execute_update(
        names.APPROVE_UPDATE, ApprovalDecision(approved=True, approver="bob", by=bob, approval_id=1)
    )
    result: AgentResult = await asyncio.wait_for(handle.result(), 60)
    assert result.approvals[0].approved_by == bob
    assert await refunds_of(db, order_id) == [15_000]
