"""Authority on the real stack: actors and row-level access, approvals, request ids.

Every test runs `AgentWorkflow` on the real dev server against real Postgres and Redis; the
only stand-ins are scripted planners at the model boundary (`tests.support.fakes`).
"""

from __future__ import annotations

import asyncio
import json
import time
from datetime import timedelta

import asyncpg
import pytest
from temporalio.client import WorkflowUpdateFailedError
from temporalio.exceptions import ApplicationError
from temporalio.testing import WorkflowEnvironment

from agentkeel.schemas import errors, names
from agentkeel.schemas.actor import Actor
from agentkeel.schemas.approvals import ApprovalAnswer, ApprovalDecision
from agentkeel.schemas.result import StepStatus
from agentkeel.schemas.search_attributes import AGENT_AWAITING
from tests.support.agent_stack import AgentStack, StackFactory
from tests.support.refunds import (
    another_customer,
    refundable_order,
    refunds_of,
    staff,
    step_of,
    until_awaiting,
)


# --- row-level access ------------------------------------------------------------------------
async def test_a_customer_cannot_read_another_customers_order(
    stack: AgentStack, db: asyncpg.Pool
) -> None:
    order_id, owner = await refundable_order(db, at_least_cents=1)
    intruder = await another_customer(db, owner)
    question = f"Where is order {order_id}?"

    theirs = await stack.ask(question, actor=Actor(role="customer", subject=str(owner)))
    assert step_of(theirs, "get_order").status == StepStatus.SUCCEEDED

    result = await stack.ask(question, actor=Actor(role="customer", subject=str(intruder)))
    refused = step_of(result, "get_order")
    assert refused.status == StepStatus.FAILED and refused.output is None
    assert refused.error is not None and refused.error.type == errors.NOT_AUTHORIZED
    assert f"order {order_id}" in refused.error.message
    assert result.cache.value == "miss", "the owner's cached answer must not reach another actor"
    assert all(s.status != StepStatus.SUCCEEDED for s in result.steps)
    # Nothing of the owner's order reaches the answer: not its tracking number, not its items.
    owned = step_of(theirs, "get_order").output
    assert owned["tracking_number"] is None or owned["tracking_number"] not in result.answer
    assert all(item["product_name"] not in result.answer for item in owned["items"])
    assert "may not access" in result.answer


async def test_a_customer_refunds_only_its_own_orders(stack: AgentStack, db: asyncpg.Pool) -> None:
    order_id, owner = await refundable_order(db, at_least_cents=500)
    intruder = await another_customer(db, owner)
    result = await stack.ask(
        f"Please refund $5.00 for order {order_id}, it arrived damaged",
        actor=Actor(role="customer", subject=str(intruder)),
    )
    assert step_of(result, "get_order").error.type == errors.NOT_AUTHORIZED  # type: ignore[union-attr]
    assert step_of(result, "create_refund").status == StepStatus.SKIPPED
    assert await refunds_of(db, order_id) == []


# --- approvals -------------------------------------------------------------------------------
@pytest.mark.smoke
async def test_a_large_refund_waits_for_approval_then_is_made(
    stack: AgentStack, db: asyncpg.Pool
) -> None:
    order_id, _ = await refundable_order(db, at_least_cents=15_000)
    handle = await stack.start(
        f"Please refund $150.00 for order {order_id}, it arrived damaged", actor=staff("ann")
    )
    awaiting = await until_awaiting(handle)
    assert (awaiting.tool, awaiting.amount_cents) == ("create_refund", 15_000)
    assert awaiting.actor.name == "ann" and awaiting.approver_role == "staff"
    described = await handle.describe()
    assert described.typed_search_attributes.get(AGENT_AWAITING) == "approval"
    assert await refunds_of(db, order_id) == [], "nothing moves before the decision"

    answer = await handle.execute_update(
        names.APPROVE_UPDATE,
        ApprovalDecision(approved=True, approver="bob", reason="damage confirmed", approval_id=1),
        result_type=ApprovalAnswer,
    )
    assert (answer.approved, answer.approver, answer.tool) == (True, "bob", "create_refund")
    with pytest.raises(WorkflowUpdateFailedError) as second:  # a second decision is refused
        await handle.execute_update(
            names.APPROVE_UPDATE, ApprovalDecision(approved=False, approver="eve", approval_id=1)
        )
    cause = second.value.cause  # typed, and not worth retrying
    assert isinstance(cause, ApplicationError) and cause.non_retryable
    assert cause.type in (errors.APPROVAL_ALREADY_DECIDED, errors.NO_APPROVAL_PENDING)

    result = await handle.result()
    # Every timer says what it is in the Web UI's history: here, the approval's deadline.
    history = await handle.fetch_history()
    timers = [e for e in history.events if e.HasField("timer_started_event_attributes")]
    summaries = [json.loads(e.user_metadata.summary.data) for e in timers]
    assert summaries and all(summaries), summaries
    assert any(s.startswith("approval 1 deadline: create_refund") for s in summaries), summaries
    refund = step_of(result, "create_refund")
    assert refund.status == StepStatus.SUCCEEDED and refund.output["created"] is True
    [record] = result.approvals
    assert (record.approved, record.approver, record.reason) == (True, "bob", "damage confirmed")
    assert [r["amount_cents"] for r in await refunds_of(db, order_id)] == [15_000]
    stored = await db.fetchrow(
        "SELECT approvals, confidence, confidence_basis FROM agent_runs WHERE workflow_id = $1",
        handle.id,
    )
    assert json.loads(stored["approvals"])[0]["approver"] == "bob"
    # A rule's fixed level is not recorded as a measured confidence.
    assert (stored["confidence"], stored["confidence_basis"]) == (None, "rules")
    assert result.route.measured_confidence is None
    described = await handle.describe()
    assert described.typed_search_attributes.get(AGENT_AWAITING) is None


async def test_a_rejected_refund_is_not_made_and_the_answer_says_so(
    stack: AgentStack, db: asyncpg.Pool
) -> None:
    order_id, _ = await refundable_order(db, at_least_cents=15_000)
    handle = await stack.start(
        f"Please refund $150.00 for order {order_id}, it arrived damaged", actor=staff()
    )
    await until_awaiting(handle)
    await handle.execute_update(
        names.APPROVE_UPDATE,
        ApprovalDecision(
            approved=False, approver="bob", reason="no damage on the photos", approval_id=1
        ),
    )
    result = await handle.result()
    refund = step_of(result, "create_refund")
    assert refund.error is not None and refund.error.type == errors.APPROVAL_DECLINED
    assert "bob" in refund.error.message
    assert result.replans == 0, "a rejection stands: no replan tries again"
    assert "rejected by bob" in result.answer
    assert result.approvals[0].approved is False
    assert await refunds_of(db, order_id) == []


async def test_an_undecided_refund_is_declined_at_the_deadline(
    make_stack: StackFactory, db: asyncpg.Pool
) -> None:
    stack = await make_stack(approval_timeout="2s")
    order_id, _ = await refundable_order(db, at_least_cents=15_000)
    result = await asyncio.wait_for(
        stack.ask(f"Please refund $150.00 for order {order_id}, it arrived damaged"), timeout=60
    )
    refund = step_of(result, "create_refund")
    assert refund.error is not None and refund.error.type == errors.APPROVAL_TIMED_OUT
    assert result.approvals[0].timed_out is True
    assert await refunds_of(db, order_id) == []


async def test_a_day_long_approval_window_runs_out_on_skipped_time(
    make_stack: StackFactory, db: asyncpg.Pool, time_skipping_env: WorkflowEnvironment
) -> None:
    """The default 24 h deadline, on a server that skips time while the run only waits."""
    stack = await make_stack(on=time_skipping_env.client)
    order_id, _ = await refundable_order(db, at_least_cents=15_000)
    started = time.monotonic()
    result = await asyncio.wait_for(
        stack.ask(f"Please refund $150.00 for order {order_id}, it arrived damaged"), timeout=60
    )
    refund = step_of(result, "create_refund")
    assert refund.error is not None and refund.error.type == errors.APPROVAL_TIMED_OUT
    [record] = result.approvals
    asked, deadline = record.request.requested_at, record.request.deadline
    assert record.timed_out and asked is not None and deadline is not None
    assert record.decided_at - deadline < timedelta(seconds=5)
    assert record.decided_at - asked >= timedelta(hours=24)
    assert time.monotonic() - started < 30, "a day of waiting took a day"
    assert await refunds_of(db, order_id) == []


async def test_a_customers_refund_above_self_service_waits_below_does_not(
    stack: AgentStack, db: asyncpg.Pool
) -> None:
    order_id, owner = await refundable_order(db, at_least_cents=3_000)
    customer = Actor(role="customer", subject=str(owner))
    small = await stack.ask(
        f"Please refund $5.00 for order {order_id}, it arrived damaged", actor=customer
    )
    assert step_of(small, "create_refund").status == StepStatus.SUCCEEDED
    assert small.approvals == []
    handle = await stack.start(
        f"Please refund $25.00 for order {order_id}, it arrived damaged", actor=customer
    )
    awaiting = await until_awaiting(handle)
    assert "self-service" in awaiting.why
    with pytest.raises(WorkflowUpdateFailedError):  # the update's input is validated
        await handle.execute_update(names.APPROVE_UPDATE, {"approved": "maybe"})
    await handle.execute_update(
        names.APPROVE_UPDATE, ApprovalDecision(approved=True, approver="bob", approval_id=1)
    )
    assert step_of(await handle.result(), "create_refund").status == StepStatus.SUCCEEDED


async def test_an_approval_for_a_run_that_waits_for_nothing_is_refused(
    stack: AgentStack,
) -> None:
    handle = await stack.start("What is your return policy?")
    await handle.result()
    with pytest.raises((WorkflowUpdateFailedError, Exception)):
        await handle.execute_update(
            names.APPROVE_UPDATE, ApprovalDecision(approved=True, approver="bob", approval_id=1)
        )


# --- request ids -----------------------------------------------------------------------------
async def test_the_same_request_sent_twice_refunds_once(
    stack: AgentStack, db: asyncpg.Pool
) -> None:
    order_id, _ = await refundable_order(db, at_least_cents=500)
    question = f"Please refund $5.00 for order {order_id}, it arrived damaged"
    first = await stack.ask(question, request_id="order-desk-42")
    second = await stack.ask(question, request_id="order-desk-42")  # a new run of its own
    assert first.workflow_id != second.workflow_id
    assert step_of(first, "create_refund").output["created"] is True
    assert step_of(second, "create_refund").output["created"] is False
    rows = await refunds_of(db, order_id)
    assert [(r["amount_cents"], r["idempotency_key"]) for r in rows] == [
        (
            500,
            f"req/{stack.tenant}/all/order-desk-42/"
            f"create_refund:order_id={order_id}:amount_cents=500",
        )
    ]
    third = await stack.ask(question, request_id="order-desk-43")  # another request
    assert step_of(third, "create_refund").output["created"] is True
