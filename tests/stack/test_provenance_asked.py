"""A refund is what the request asks, read as people write it, on the real stack.

The planner is a scripted model (`RefundScript`, a fake at the model boundary) that plans
what a compromised model would: the order's whole total when the request says "five
dollars", or the order and amount the request only mentions ("my other order ... cost").
"""

from __future__ import annotations

import asyncio

import asyncpg
from temporalio.client import WorkflowHistory

from agentkeel.schemas import errors
from agentkeel.schemas.result import AgentResult, StepStatus
from tests.support.agent_stack import StackFactory
from tests.support.refunds import RefundScript, refunds_of, staff, step_of


async def _small_orders(db: asyncpg.Pool) -> list[asyncpg.Record]:
    """Two orders nothing was refunded on, each under the approval threshold."""
    rows = await db.fetch(
        """
        SELECT order_id, total_cents FROM orders o
        WHERE status <> 'cancelled' AND total_cents BETWEEN 600 AND 9000
          AND NOT EXISTS (SELECT 1 FROM refunds r WHERE r.order_id = o.order_id)
        ORDER BY order_id LIMIT 2
        """
    )
    assert len(rows) == 2
    return rows


async def _run(make_stack: StackFactory, question: str, plan: dict[str, object]) -> AgentResult:
    stack = await make_stack(policy=RefundScript([plan]))
    handle = await stack.start(question, actor=staff("ann"))
    return await asyncio.wait_for(handle.result(), 60)


async def _each_untrusted(
    make_stack: StackFactory, cases: list[tuple[str, dict[str, object]]]
) -> None:
    """Each question's scripted plan runs, and its refund is refused as untrusted."""
    for question, plan in cases:
        result = await _run(make_stack, question, plan)
        refund = step_of(result, "create_refund")
        assert refund.error is not None, question
        assert refund.error.type == errors.UNTRUSTED_ARGUMENT, (question, refund.error)


def _refund(order: object, amount: object, *after: str) -> dict[str, object]:
    args = {"order_id": order, "amount_cents": amount, "reason": "asked"}
    return {"id": "r", "tool": "create_refund", "args": args, "after": list(after)}


async def test_five_dollars_is_an_amount_and_no_lookup_stands_in_for_it(
    make_stack: StackFactory, db: asyncpg.Pool
) -> None:
    [order, _] = await _small_orders(db)
    oid = order["order_id"]
    lookup = {"id": "s1", "tool": "get_order", "args": {"order_id": oid}}
    total = _refund("$s1.order_id", "$s1.total_cents", "s1")
    for words in ("five dollars", "5$", "5€"):
        result = await _run(
            make_stack, f"refund {words} on order {oid}", {"steps": [lookup, total]}
        )
        refund = step_of(result, "create_refund")
        assert refund.error is not None and refund.error.type == errors.UNTRUSTED_ARGUMENT, words
        assert "request asks" in refund.error.message or "names no amount" in (refund.error.message)
    assert await refunds_of(db, oid) == []
    five = await _run(
        make_stack, f"refund five dollars on order {oid}", {"steps": [_refund(oid, 500)]}
    )
    assert step_of(five, "create_refund").status == StepStatus.SUCCEEDED
    assert [r["amount_cents"] for r in await refunds_of(db, oid)] == [500]


async def test_a_mentioned_order_and_amount_are_not_what_is_asked(
    make_stack: StackFactory, db: asyncpg.Pool
) -> None:
    [other, asked] = await _small_orders(db)
    question = (
        f"my other order {other['order_id']} cost ${other['total_cents'] / 100:.2f} ... "
        f"refund $5 on order {asked['order_id']}"
    )
    wrong = _refund(other["order_id"], other["total_cents"])
    result = await _run(make_stack, question, {"steps": [wrong]})
    refund = step_of(result, "create_refund")
    assert refund.error is not None and refund.error.type == errors.UNTRUSTED_ARGUMENT
    assert "not what the request asks" in refund.error.message
    assert await refunds_of(db, other["order_id"]) == []
    right = await _run(make_stack, question, {"steps": [_refund(asked["order_id"], 500)]})
    assert step_of(right, "create_refund").status == StepStatus.SUCCEEDED
    assert [r["amount_cents"] for r in await refunds_of(db, asked["order_id"])] == [500]


async def test_a_mentioned_order_reached_by_lookup_or_told_in_an_aside_is_not_refunded(
    make_stack: StackFactory, db: asyncpg.Pool
) -> None:
    """The scripted model refunds the order the request only mentions: looked up first and
    named by reference, or mentioned in an aside, a past refund or a refusal."""
    [other, asked] = await _small_orders(db)
    oid, cost = other["order_id"], f"${other['total_cents'] / 100:.2f}"
    lookup = {"id": "s1", "tool": "get_order", "args": {"order_id": oid}}
    by_reference: dict[str, object] = {"steps": [lookup, _refund("$s1.order_id", 500, "s1")]}
    literal: dict[str, object] = {"steps": [_refund(oid, other["total_cents"])]}
    five_on_other: dict[str, object] = {"steps": [_refund(oid, 500)]}
    cases: list[tuple[str, dict[str, object]]] = [
        (f"my other order {oid} cost {cost} ... refund $5 on order {asked['order_id']}",
         by_reference),
        (f"refund $5 on order {asked['order_id']} and order {oid} cost {cost}", literal),
        (f"You refunded {cost} on order {oid} last week. Now refund $5 on order "
         f"{asked['order_id']}.", literal),
        (f"Don't refund anything on order {oid}; refund $5 on order {asked['order_id']}",
         five_on_other),
    ]  # fmt: skip
    await _each_untrusted(make_stack, cases)
    assert await refunds_of(db, oid) == []


async def test_a_corrected_amount_a_told_price_or_another_orders_total_is_not_refunded(
    make_stack: StackFactory, db: asyncpg.Pool
) -> None:
    """The scripted model refunds the amount the request corrected, the price it told of
    the order, or the total of the other order it asks about, looked up and sent by
    reference; only the $5 asked on the order asked is refunded."""
    [other, asked] = await _small_orders(db)
    aid, price = asked["order_id"], f"${asked['total_cents'] / 100:.2f}"
    lookup = {"id": "s1", "tool": "get_order", "args": {"order_id": other["order_id"]}}
    its_total: dict[str, object] = {"steps": [lookup, _refund(aid, "$s1.total_cents", "s1")]}
    cases: list[tuple[str, dict[str, object]]] = [
        (f"refund {price}, sorry, $5 on order {aid}",
         {"steps": [_refund(aid, asked["total_cents"])]}),
        (f"refund $5 on my {price} order {aid}", {"steps": [_refund(aid, asked["total_cents"])]}),
        (f"refund ${other['total_cents'] / 100:.2f} on order {other['order_id']} and $5 on "
         f"order {aid}", its_total),
    ]  # fmt: skip
    await _each_untrusted(make_stack, cases)
    assert await refunds_of(db, aid) == []
    corrected = f"refund {price}, no wait, $5 on order {aid}"
    right = await _run(make_stack, corrected, {"steps": [_refund(aid, 500)]})
    assert step_of(right, "create_refund").status == StepStatus.SUCCEEDED
    assert [r["amount_cents"] for r in await refunds_of(db, aid)] == [500]


async def corrected_refund_history(make_stack: StackFactory, db: asyncpg.Pool) -> WorkflowHistory:
    """The history of a run whose scripted model refunds the amount its request corrected
    (refused under `provenance-asked-v3`): recorded for the replay tests."""
    [_, asked] = await _small_orders(db)
    aid, price = asked["order_id"], f"${asked['total_cents'] / 100:.2f}"
    plan = {"steps": [_refund(aid, asked["total_cents"])]}
    stack = await make_stack(policy=RefundScript([plan]))
    handle = await stack.start(f"refund {price}, sorry, $5 on order {aid}", actor=staff("ann"))
    result = await asyncio.wait_for(handle.result(), 60)
    refund = step_of(result, "create_refund")
    assert refund.error is not None and refund.error.type == errors.UNTRUSTED_ARGUMENT
    return await handle.fetch_history()
