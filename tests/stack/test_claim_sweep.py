"""A run that ends without settling its side effect's claim (terminated) has the claim
ended by the sweep every CPU worker runs (`workers.claim_sweep`): `cancelled` where its
call never started (it stops counting), `unknown` where it had (it may have moved). Real
dev server and Postgres; the planner is a scripted model (`RefundScript`, a fake at the
model boundary)."""

from __future__ import annotations

import asyncio

import asyncpg
import pytest
from temporalio import activity

from agentkeel.activities.effects_ledger import EffectLedger
from agentkeel.schemas import errors
from agentkeel.schemas.actor import Actor
from agentkeel.schemas.effects import AuditQuery, EffectStatus
from agentkeel.workers import claim_sweep
from agentkeel.workers.claim_sweep import sweep_claims
from tests.support.agent_stack import StackFactory
from tests.support.refunds import RefundScript, refundable_order, refunds_plan, until_awaiting


async def test_a_terminated_run_waiting_for_approval_has_its_claim_cancelled(
    make_stack: StackFactory, db: asyncpg.Pool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A live run's claim, older and waiting for an approval, is passed over (and the sweep
    pages past it: one claim a page here) to the terminated run's."""
    live_order, live_owner = await refundable_order(db, at_least_cents=10_000)
    order_id, owner = await refundable_order(db, at_least_cents=10_000, other_than=live_order)
    customer = Actor(role="customer", subject=str(owner))
    plans = [refunds_plan(live_order, 9_000), refunds_plan(order_id, 9_000)]
    stack = await make_stack(policy=RefundScript(plans))
    live_customer = Actor(role="customer", subject=str(live_owner))
    live = await stack.start(f"refund $90 on order {live_order}", actor=live_customer)
    await until_awaiting(live)
    waiting = await stack.start(f"refund $90 on order {order_id}", actor=customer)
    await until_awaiting(waiting)
    await waiting.terminate("an operator stopped it")
    monkeypatch.setattr(claim_sweep, "PAGE", 1)
    ledger = EffectLedger(db)
    query = AuditQuery(tenant=stack.tenant, target=f"order_id={order_id}")
    [open_claim] = await ledger.entries(query)
    assert open_claim.status == EffectStatus.CLAIMED
    assert await sweep_claims(ledger, stack.client, older_than_s=0) >= 1
    [entry] = await ledger.entries(query)
    assert entry.status == EffectStatus.CANCELLED and entry.error_type == errors.RUN_ENDED
    assert "terminated" in entry.reason and "before the call started" in entry.reason
    assert entry.settled_at is not None
    [still] = await ledger.entries(AuditQuery(tenant=stack.tenant, target=f"order_id={live_order}"))
    assert still.status == EffectStatus.CLAIMED, "a live run's claim is its own"


async def test_a_terminated_run_whose_call_had_started_leaves_it_unknown(
    make_stack: StackFactory, db: asyncpg.Pool
) -> None:
    started = asyncio.Event()

    @activity.defn(name="create_refund")
    async def hanging_refund(args: dict[str, object]) -> dict[str, object]:
        if args.get("authorize_only"):
            return {"authorized": True}  # the authority check before the claim
        started.set()
        await asyncio.sleep(3600)
        return {}

    order_id, _ = await refundable_order(db, at_least_cents=1_000)
    stack = await make_stack(
        policy=RefundScript([refunds_plan(order_id, 500)]), replace_activities=[hanging_refund]
    )
    running = await stack.start(
        f"refund $5 on order {order_id}", actor=Actor(role="staff", name="ann")
    )
    await asyncio.wait_for(started.wait(), 30)
    await running.terminate("an operator stopped it")
    ledger = EffectLedger(db)
    assert await sweep_claims(ledger, stack.client, older_than_s=0) >= 1
    [entry] = await ledger.entries(AuditQuery(tenant=stack.tenant, target=f"order_id={order_id}"))
    assert entry.status == EffectStatus.UNKNOWN and entry.error_type == errors.RUN_ENDED
    assert "after the call started" in entry.reason
