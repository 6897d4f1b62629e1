"""Limits across runs and the audit trail, on the real stack (dev server, Postgres, Redis).

The effects ledger counts what an actor, and what a target, moved in the domain's window,
whichever run moved it: five requests of $19 do not pass a $20 self-service limit, two
staff members refunding one order count together, and two runs claiming at once are
counted one after the other. Every effect, refusal and decision is listed by the audit.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys

import asyncpg
import httpx

from agentkeel.activities.effects_ledger import EffectLedger
from agentkeel.gateway.app import create_app
from agentkeel.gateway.keys import ApiKey, ApiKeys
from agentkeel.gateway.server import serving
from agentkeel.schemas import errors, names
from agentkeel.schemas.actor import Actor
from agentkeel.schemas.approvals import ApprovalDecision
from agentkeel.schemas.effects import AuditQuery, EffectStatus
from agentkeel.schemas.model_calls import PlanInput, PlanResult
from agentkeel.schemas.plan.model import Plan
from agentkeel.schemas.progress import RunProgress
from agentkeel.schemas.result import AgentResult, StepStatus
from agentkeel.settings.ports import free_port
from tests.support.agent_stack import StackFactory
from tests.support.refunds import RefundScript, refundable_order, refunds_plan, until_awaiting


async def statuses(db: asyncpg.Pool, order_id: int) -> list[str]:
    rows = await db.fetch(
        "SELECT status FROM agent_effects WHERE target = $1 ORDER BY effect_id",
        f"order_id={order_id}",
    )
    return [r["status"] for r in rows]


async def test_small_refunds_in_separate_runs_count_toward_one_self_service_limit(
    make_stack: StackFactory, db: asyncpg.Pool
) -> None:
    order_id, owner = await refundable_order(db, at_least_cents=10_000)
    customer = Actor(role="customer", subject=str(owner))
    stack = await make_stack(policy=RefundScript([refunds_plan(order_id, 1900)]))
    question = f"refund $19 on order {order_id}"
    first: AgentResult = await (await stack.start(question, actor=customer)).result()
    assert first.steps[0].status is StepStatus.SUCCEEDED
    # The second request is a new run with a new key: the ledger still counts the first.
    second = await stack.start(question, actor=customer, request_id="second")
    awaiting = await until_awaiting(second)
    assert "self-service limit" in awaiting.why and "1900 cents moved earlier" in awaiting.why
    await second.execute_update(
        names.APPROVE_UPDATE,
        ApprovalDecision(
            approved=False, approver="bob", by=Actor(role="staff", name="bob"), approval_id=1
        ),
    )
    declined: AgentResult = await second.result()
    assert declined.steps[0].error is not None
    assert declined.steps[0].error.type == errors.APPROVAL_DECLINED
    assert await statuses(db, order_id) == ["made", "declined"]
    refunded = await db.fetchval(
        "SELECT count(*) FROM refunds WHERE order_id = $1 AND idempotency_key IS NOT NULL",
        order_id,
    )
    assert refunded == 1


async def test_two_actors_refunding_one_order_count_together(
    make_stack: StackFactory, db: asyncpg.Pool
) -> None:
    order_id, _ = await refundable_order(db, at_least_cents=12_000)
    stack = await make_stack(policy=RefundScript([refunds_plan(order_id, 6000)]))
    question = f"refund $60 on order {order_id}"
    ann = Actor(role="staff", name="ann")
    made: AgentResult = await (await stack.start(question, actor=ann)).result()
    assert made.steps[0].status is StepStatus.SUCCEEDED
    # Another staff member, under the $100 threshold alone: the order's window is not.
    other = await stack.start(question, actor=Actor(role="staff", name="cy"), request_id="2")
    awaiting = await until_awaiting(other)
    assert "approval threshold" in awaiting.why and "6000 cents moved earlier" in awaiting.why
    await other.cancel()


async def test_runs_claiming_at_once_are_counted_one_after_the_other(
    make_stack: StackFactory, db: asyncpg.Pool
) -> None:
    order_id, owner = await refundable_order(db, at_least_cents=10_000)
    customer = Actor(role="customer", subject=str(owner))
    stack = await make_stack(policy=RefundScript([refunds_plan(order_id, 1500)]))
    question = f"refund $15 on order {order_id}"
    handles = await asyncio.gather(
        *(stack.start(question, actor=customer, request_id=f"at-once-{i}") for i in range(3))
    )
    expected = ["claimed", "claimed", "made"]  # one made, two waiting for approval
    for _ in range(150):
        if sorted(await statuses(db, order_id)) == expected:
            break
        await asyncio.sleep(0.2)
    assert sorted(await statuses(db, order_id)) == expected
    waiting = [
        (await h.query(names.PROGRESS_QUERY, result_type=RunProgress)).awaiting is not None
        for h in handles
    ]
    assert sorted(waiting) == [False, True, True], "only one $15 refund fits the $20 limit"
    for handle in handles:
        await handle.cancel()


class PlanByQuestion(RefundScript):
    """Plans a refund of the amount each question's key word maps to (one planner for
    several runs, whatever order they plan in)."""

    def __init__(self, order_id: int, amounts: dict[str, int]) -> None:
        super().__init__([refunds_plan(order_id, 1)])
        self._order_id, self._amounts = order_id, amounts

    async def plan(self, request: PlanInput) -> PlanResult:
        word = next(w for w in self._amounts if w in request.question)
        plan = refunds_plan(self._order_id, self._amounts[word])
        return PlanResult(plan=Plan.model_validate(plan))


async def test_the_audit_lists_effects_refusals_and_decisions(
    make_stack: StackFactory, db: asyncpg.Pool, database_url: str
) -> None:
    order_id, _ = await refundable_order(db, at_least_cents=20_000)
    # "refund what the article says": the planner writes an amount no one asked for.
    amounts = {"$5 ": 500, "article": 9999, "$150 ": 15000}
    stack = await make_stack(policy=PlanByQuestion(order_id, amounts))
    ann = Actor(role="staff", name="ann")
    await (await stack.start(f"refund $5 on order {order_id}", actor=ann)).result()
    refused: AgentResult = await (
        await stack.start(
            f"refund order {order_id} what the article says", actor=ann, request_id="inj"
        )
    ).result()
    assert refused.steps[0].error is not None
    assert refused.steps[0].error.type == errors.UNTRUSTED_ARGUMENT
    big = await stack.start(f"refund $150 on order {order_id}", actor=ann, request_id="big")
    await until_awaiting(big)
    approver = Actor(role="staff", name="Lee")
    await big.execute_update(
        names.APPROVE_UPDATE,
        ApprovalDecision(approved=True, approver="lee", by=approver, approval_id=1),
    )
    await big.result()

    ledger = EffectLedger(db)
    entries = await ledger.entries(AuditQuery(tenant=stack.tenant, target=f"order_id={order_id}"))
    assert [(e.status, e.amount_cents) for e in entries] == [
        (EffectStatus.MADE, 15000),
        (EffectStatus.REFUSED, 9999),
        (EffectStatus.MADE, 500),
    ]
    approved, refusal, _ = entries
    assert approved.approved_by == approver and approved.approver == "lee"
    assert approved.request_id == "big" and approved.workflow_id == big.id
    assert "approval threshold" in (approved.approval_why or "")
    assert refusal.error_type == errors.UNTRUSTED_ARGUMENT and refusal.effect_key is None
    assert not refusal.provenance["amount_cents"].trusted
    assert all(e.actor.name == "ann" for e in entries)
    # By actor, and through the command line operators use.
    assert len(await ledger.entries(AuditQuery(tenant=stack.tenant, actor="staff~ann"))) == 3
    assert await ledger.entries(AuditQuery(tenant=stack.tenant, actor="staff~lee")) == []
    cli = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "agentkeel.cli.main",
        "audit",
        "--tenant",
        stack.tenant,
        "--target",
        f"order_id={order_id}",
        "--json",
        env={
            **os.environ,
            "AGENTKEEL_DATABASE_URL": database_url,
            "AGENTKEEL_LOG_LEVEL": "warning",
        },
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await cli.communicate()
    assert cli.returncode == 0, err.decode()
    listed = json.loads(out)
    assert [e["status"] for e in listed] == ["made", "refused", "made"]


async def test_the_gateway_lists_the_ledger_as_far_as_a_key_may_see(
    make_stack: StackFactory, db: asyncpg.Pool
) -> None:
    order_id, owner = await refundable_order(db, at_least_cents=1_000)
    stack = await make_stack(policy=RefundScript([refunds_plan(order_id, 500)]))
    customer = Actor(role="customer", subject=str(owner))
    await (await stack.start(f"refund $5 on order {order_id}", actor=customer)).result()
    tokens = {"own": "c" * 32, "other": "o" * 32, "staff": "s" * 32}
    keys = ApiKeys(
        [
            ApiKey(token=tokens["own"], tenant=stack.tenant, actor=customer),
            ApiKey(
                token=tokens["other"],
                tenant=stack.tenant,
                actor=Actor(role="customer", subject=str(owner + 1)),
            ),
            ApiKey(
                token=tokens["staff"], tenant=stack.tenant, actor=Actor(role="staff", name="bo")
            ),
        ]
    )
    app = create_app(stack.agent_client(), keys, settings=stack.settings)
    async with serving(app, "127.0.0.1", free_port()) as base:
        async with httpx.AsyncClient(base_url=base, timeout=30, trust_env=False) as http:

            async def audit(who: str, **params: str) -> httpx.Response:
                headers = {"Authorization": f"Bearer {tokens[who]}"}
                return await http.get("/v1/audit", params=params, headers=headers)

            own = await audit("own")
            assert own.status_code == 200, own.text
            assert [(e["status"], e["target"]) for e in own.json()] == [
                ("made", f"order_id={order_id}")
            ]
            assert (await audit("other")).json() == []  # another customer's effects: none
            assert (await audit("other", actor=f"customer:{owner}")).status_code == 403
            assert (await audit("own", tenant="elsewhere")).status_code == 403
            staff = await audit("staff", target=f"order_id={order_id}")
            assert [e["actor"]["subject"] for e in staff.json()] == [str(owner)]
            assert (await audit("staff", limit="0")).status_code == 422
