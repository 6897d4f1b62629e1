"""The ledger follows the run: a claim whose run is cancelled while it waits for approval
ends (`cancelled`), stops counting, and the audit shows how and when it ended; a customer's
refund of another's order is refused before anything is claimed.

The planner is a scripted model (`RefundScript`, a fake at the model boundary).
"""

from __future__ import annotations

import asyncio
import uuid
from datetime import timedelta

import asyncpg
import pytest
from temporalio import activity
from temporalio.client import WorkflowFailureError

from agentkeel.activities.effects_ledger import EffectLedger
from agentkeel.schemas import errors, names
from agentkeel.schemas.actor import Actor
from agentkeel.schemas.effects import (
    AuditQuery,
    EffectClaim,
    EffectClaimed,
    EffectSettlement,
    EffectStatus,
)
from agentkeel.schemas.request import AgentRequest
from agentkeel.schemas.result import AgentResult, StepStatus
from agentkeel.workflows.agent import AgentWorkflow
from tests.support.agent_stack import StackFactory
from tests.support.gateway_http import gateway
from tests.support.refunds import (
    RefundScript,
    another_customer,
    refundable_order,
    refunds_plan,
    staff,
    until_awaiting,
)


async def test_a_cancelled_wait_for_approval_releases_its_claim(
    make_stack: StackFactory, db: asyncpg.Pool
) -> None:
    order_id, owner = await refundable_order(db, at_least_cents=10_000)
    customer = Actor(role="customer", subject=str(owner))
    plans = [refunds_plan(order_id, 9_000), refunds_plan(order_id, 1_500)]
    stack = await make_stack(policy=RefundScript(plans))
    waiting = await stack.start(f"refund $90 on order {order_id}", actor=customer)
    await until_awaiting(waiting)
    await waiting.cancel()
    with pytest.raises(WorkflowFailureError):
        await asyncio.wait_for(waiting.result(), 30)

    ledger = EffectLedger(db)
    [entry] = await ledger.entries(AuditQuery(tenant=stack.tenant, target=f"order_id={order_id}"))
    assert entry.status == EffectStatus.CANCELLED and entry.amount_cents == 9_000
    assert entry.settled_at is not None and "cancelled while it waited" in entry.reason
    # The $90 no longer counts: $15, under the $20 self-service limit, needs no approval.
    small = await stack.start(f"refund $15 on order {order_id}", actor=customer)
    result: AgentResult = await asyncio.wait_for(small.result(), 30)
    assert [s.status for s in result.steps] == [StepStatus.SUCCEEDED]
    assert result.approvals == []


async def test_a_customers_refund_of_anothers_order_is_refused_before_it_is_claimed(
    make_stack: StackFactory, db: asyncpg.Pool
) -> None:
    order_id, owner = await refundable_order(db, at_least_cents=10_000)
    stranger = Actor(role="customer", subject=str(await another_customer(db, owner)))
    plans = [refunds_plan(order_id, 90_000), refunds_plan(order_id, 9_000)]
    stack = await make_stack(policy=RefundScript(plans))
    asked = await stack.start(f"refund $900 on order {order_id}", actor=stranger)
    refused: AgentResult = await asyncio.wait_for(asked.result(), 30)
    [step] = refused.steps
    assert step.error is not None and step.error.type == errors.NOT_AUTHORIZED
    assert refused.approvals == [], "refused before any approver was asked"
    ledger = EffectLedger(db)
    [entry] = await ledger.entries(AuditQuery(tenant=stack.tenant, target=f"order_id={order_id}"))
    assert entry.status == EffectStatus.REFUSED and entry.error_type == errors.NOT_AUTHORIZED
    # Nothing of it counts on the order: staff's $90 needs no approval there.
    refund = await stack.start(f"refund $90 on order {order_id}", actor=staff("ann"))
    result: AgentResult = await asyncio.wait_for(refund.result(), 30)
    assert [s.status for s in result.steps] == [StepStatus.SUCCEEDED]
    assert result.approvals == []


async def test_the_audit_answers_a_malformed_query_with_a_json_4xx(
    make_stack: StackFactory,
) -> None:
    stack = await make_stack()
    malformed = (
        {"actor": "customer:\x005"},
        {"target": "order_id=\x00"},
        {"tenant": "t\x00"},
        {"since": "0001-01-01T00:00:00+01:00"},
        {"until": "9999-12-31T23:59:59-05:00"},
        {"since": "yesterday"},
        {"limit": "0"},
        {"limit": "99999999999999999999"},
    )
    async with gateway(stack) as http:
        for params in malformed:
            answer = await http.get("/v1/audit", params=params)
            assert 400 <= answer.status_code < 500, (params, answer.status_code, answer.text)
            assert "json" in answer.headers["content-type"], (params, answer.text)
            assert answer.json()
        assert (await http.get("/v1/audit", params={"limit": "5"})).status_code == 200
        # The approval route, whose body and path changed: malformed is a JSON 4xx too.
        for path, body in (
            ("/v1/runs/a%00b/approve", {"approved": True, "approval_id": 1}),
            ("/v1/runs/x/approve", {"approved": True, "approval_id": "1\x00"}),
            ("/v1/runs/x/approve", {"approved": True, "approval_id": 1, "reason": "\x00"}),
        ):
            answer = await http.post(path, json=body)
            assert 400 <= answer.status_code < 500, (path, body, answer.text)
            assert "json" in answer.headers["content-type"] and answer.json()


async def test_a_cancel_ends_only_the_claim_its_own_call_wrote(db: asyncpg.Pool) -> None:
    """`claim-cancel-v1`: a run cancelled while its claim was being written ends the claim
    only where that call of that run wrote it, never a live claim of another run under the
    same key (an idempotent retry's) that it did not insert."""
    ledger = EffectLedger(db)
    tenant = f"ledger-{uuid.uuid4().hex[:8]}"
    key = f"refund_order:{tenant}"
    claim = EffectClaim(
        tenant=tenant,
        effect_key=key,
        tool="refund_order",
        actor=Actor(role="customer", subject="7"),
        workflow_id="wf-a",
        run_id="run-a",
        step_id="s1",
        call_id="s1",
        window_s=3600,
    )
    await ledger.claim(claim)

    async def settle(run: str, call: str) -> EffectStatus:
        await ledger.settle(
            EffectSettlement(
                effect_key=key,
                status=EffectStatus.CANCELLED,
                claimed_by_run=run,
                claimed_by_call=call,
            )
        )
        [entry] = await ledger.entries(AuditQuery(tenant=tenant))
        return entry.status

    assert await settle("run-b", "s1") == EffectStatus.CLAIMED, "another run's claim stays"
    assert await settle("run-a", "s2") == EffectStatus.CLAIMED, "another step's claim stays"
    assert await settle("run-a", "s1") == EffectStatus.CANCELLED


async def test_a_cancel_while_the_claim_is_written_ends_that_claim(
    make_stack: StackFactory, db: asyncpg.Pool
) -> None:
    """`claim-cancel-v2`: the cancel lands while the claim's local activity runs, after its
    row was written; the write runs to its end, then the run ends that claim, so it does
    not count against the customer afterwards, and no approval or effect follows."""
    written = asyncio.Event()
    ledger = EffectLedger(db)

    @activity.defn(name=names.CLAIM_EFFECT)
    async def claim_then_linger(claim: EffectClaim) -> EffectClaimed:
        claimed = await ledger.claim(claim)
        written.set()
        await asyncio.sleep(4)  # the run is cancelled here, its claim already written
        return claimed  # and the write returns as if nothing happened

    order_id, owner = await refundable_order(db, at_least_cents=10_000)
    customer = Actor(role="customer", subject=str(owner))
    plans = [refunds_plan(order_id, 1_500), refunds_plan(order_id, 1_500)]
    stack = await make_stack(policy=RefundScript(plans), replace_activities=[claim_then_linger])
    request = AgentRequest(
        question=f"refund $15 on order {order_id}", tenant=stack.tenant, actor=customer
    )
    # A short workflow task: the cancel reaches the run while the claim still runs (a local
    # activity holds its workflow task, which is heartbeated at 80 % of its timeout).
    handle = await stack.client.start_workflow(
        AgentWorkflow.run,
        request,
        id=f"test-{uuid.uuid4().hex[:12]}",
        task_queue=stack.task_queue,
        task_timeout=timedelta(seconds=2),
    )
    stack.started.append(handle)
    await asyncio.wait_for(written.wait(), 30)
    await handle.cancel()
    with pytest.raises(WorkflowFailureError):
        await asyncio.wait_for(handle.result(), 30)
    [entry] = await ledger.entries(AuditQuery(tenant=stack.tenant, target=f"order_id={order_id}"))
    assert entry.status == EffectStatus.CANCELLED, entry
    assert entry.settled_at is not None and "cancelled while being claimed" in entry.reason
