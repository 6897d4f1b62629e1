"""An approval decides one request, named by its id, on every door: the Temporal update, the
client the CLI and the gateway share, and the gateway's route.

The planner here is a scripted model (`RefundScript`, a fake at the model boundary) that
plans two large refunds: the approver sees the first, and a second decision sent without
an id (or for the first again) must not land on the second, which nobody saw.
"""

from __future__ import annotations

import asyncio

import asyncpg
import pytest
from temporalio.client import WorkflowUpdateFailedError
from temporalio.exceptions import ApplicationError

from agentkeel.client.approvals import ApprovalRefused, decide_approval
from agentkeel.schemas import errors, names
from agentkeel.schemas.actor import Actor
from agentkeel.schemas.approvals import ApprovalDecision
from agentkeel.schemas.result import AgentResult, StepStatus
from tests.support.agent_stack import StackFactory
from tests.support.gateway_http import gateway
from tests.support.refunds import (
    RefundScript,
    refundable_order,
    refunds_of,
    refunds_plan,
    staff,
    until_awaiting,
)

BOB = Actor(role="staff", name="bob")


def _decision(approval_id: int | None, approved: bool = True) -> ApprovalDecision:
    return ApprovalDecision(approved=approved, approver="bob", by=BOB, approval_id=approval_id)


async def _refused(call: object) -> ApprovalRefused:
    with pytest.raises(ApprovalRefused) as refused:
        await call  # type: ignore[misc]
    return refused.value


async def test_a_decision_names_the_approval_it_decides_and_no_other(
    make_stack: StackFactory, db: asyncpg.Pool
) -> None:
    order_id, _ = await refundable_order(db, at_least_cents=30_001)
    plan = refunds_plan(order_id, 15_000, 15_001)
    stack = await make_stack(policy=RefundScript([plan]))
    asked = f"refund $150 and $150.01 on order {order_id}"
    handle = await stack.start(asked, actor=staff("ann"))
    first = await until_awaiting(handle)
    assert first.approval_id == 1
    temporal, wid = stack.client, handle.id

    # The Temporal update itself refuses a decision that names no approval, and says so.
    with pytest.raises(WorkflowUpdateFailedError) as unnamed:
        await handle.execute_update(names.APPROVE_UPDATE, _decision(None))
    cause = unnamed.value.cause
    assert isinstance(cause, ApplicationError) and cause.type == errors.APPROVAL_ID_REQUIRED
    assert "approval_id" in cause.message and "approval 1" in cause.message
    no_id = await _refused(decide_approval(temporal, wid, _decision(None)))
    assert no_id.type == errors.APPROVAL_ID_REQUIRED
    unknown = await _refused(decide_approval(temporal, wid, _decision(7)))
    assert unknown.type == errors.UNKNOWN_APPROVAL

    assert (await decide_approval(temporal, wid, _decision(1))).approval_id == 1
    second = await until_awaiting(handle)
    assert second.approval_id == 2 and second.call_id != first.call_id
    # The approver's decision sent again: it names approval 1, decided; the second waits on.
    again = await _refused(decide_approval(temporal, wid, _decision(1)))
    assert again.type == errors.APPROVAL_ALREADY_DECIDED
    with pytest.raises(WorkflowUpdateFailedError) as twice:
        await handle.execute_update(names.APPROVE_UPDATE, _decision(1))
    assert getattr(twice.value.cause, "type", None) == errors.APPROVAL_ALREADY_DECIDED
    assert (await until_awaiting(handle)).approval_id == 2, "still waiting for its own decision"

    await decide_approval(temporal, wid, _decision(2, approved=False))
    result: AgentResult = await asyncio.wait_for(handle.result(), 60)
    assert [s.status for s in result.steps] == [StepStatus.SUCCEEDED, StepStatus.FAILED]
    assert [r["amount_cents"] for r in await refunds_of(db, order_id)] == [15_000]


async def test_the_gateway_refuses_a_decision_without_its_approval_id(
    make_stack: StackFactory, db: asyncpg.Pool
) -> None:
    order_id, _ = await refundable_order(db, at_least_cents=15_000)
    stack = await make_stack(policy=RefundScript([refunds_plan(order_id, 15_000)]))
    handle = await stack.start(f"refund $150 on order {order_id}", actor=staff("ann"))
    await until_awaiting(handle)
    async with gateway(stack) as http:
        approve = f"/v1/runs/{handle.id}/approve"
        body = {"approved": True, "approver": "bob"}
        unnamed = await http.post(approve, json=body)
        assert unnamed.status_code == 422, unnamed.text
        assert errors.APPROVAL_ID_REQUIRED in unnamed.text and "approval_id" in unnamed.text
        assert unnamed.json()["type"] == "/problems/approval-id-required"
        other = await http.post(approve, json=body | {"approval_id": 2})
        assert other.status_code == 409 and errors.UNKNOWN_APPROVAL in other.text
        assert other.json()["type"] == "/problems/unknown-approval"  # one type per refusal
        named = await http.post(approve, json=body | {"approval_id": 1})
        assert named.status_code == 200, named.text
    assert (await asyncio.wait_for(handle.result(), 60)).approvals[0].approved
