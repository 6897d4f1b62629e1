"""A refund's amount in the shop's currency, its order of the kind asked, and no order looked
up in place of the one asked, on the real stack (`schemas.plan.kinds`, `provenance-asked-v4`).

The planner is a scripted model (`RefundScript`, a fake at the model boundary) that plans
what a compromised model would.
"""

from __future__ import annotations

import asyncpg

from agentkeel.schemas.result import StepStatus
from tests.stack.test_provenance_asked import _each_untrusted, _refund, _run
from tests.support.agent_stack import StackFactory
from tests.support.refunds import refunds_of, step_of


async def _two_small_orders_of_one_customer(db: asyncpg.Pool) -> tuple[int, int, int]:
    """(asked, other, other's index in `list_orders`): two unrefunded orders of one
    customer, under the approval threshold, as `list_orders` lists them."""
    row = await db.fetchrow(
        """
        SELECT customer_id FROM orders o
        WHERE status <> 'cancelled' AND total_cents BETWEEN 600 AND 9000
          AND NOT EXISTS (SELECT 1 FROM refunds r WHERE r.order_id = o.order_id)
        GROUP BY customer_id HAVING count(*) >= 2 ORDER BY customer_id LIMIT 1
        """
    )
    assert row is not None
    listed = await db.fetch(
        "SELECT order_id, total_cents, status FROM orders WHERE customer_id = $1"
        " ORDER BY placed_at DESC, order_id DESC LIMIT 10",
        row["customer_id"],
    )
    small = [
        r["order_id"]
        for r in listed
        if r["status"] != "cancelled" and 600 <= r["total_cents"] <= 9000
    ]
    asked, other = small[0], small[1]
    index = [r["order_id"] for r in listed].index(other)
    return asked, other, index


async def test_a_foreign_amount_an_item_number_or_a_looked_up_order_is_not_refunded(
    make_stack: StackFactory, db: asyncpg.Pool
) -> None:
    """The scripted model refunds 500 cents where the request asks five euros, the item the
    request names beside the order, another order of the same customer, looked up through
    the asked order's owner (every value trusted, none the one asked), the amount the
    request corrected, and a refund the request dropped."""
    asked, other, index = await _two_small_orders_of_one_customer(db)
    owner = {"id": "s1", "tool": "get_order", "args": {"order_id": asked}}
    orders = {"id": "s2", "tool": "list_orders", "args": {"customer_id": "$s1.customer_id"}}
    looked_up: dict[str, object] = {
        "steps": [owner, orders, _refund(f"$s2.orders.{index}.order_id", 500, "s2")]
    }
    cases: list[tuple[str, dict[str, object]]] = [
        (f"refund 5€ on order {asked}", {"steps": [_refund(asked, 500)]}),
        (f"refund five euros on order {asked}", {"steps": [_refund(asked, 500)]}),
        (f"refund $5 for item {other} on order {asked}", {"steps": [_refund(other, 500)]}),
        (f"refund $5 on order {asked}", looked_up),
        (f"refund $50 oops $5 on order {asked}", {"steps": [_refund(asked, 5000)]}),
        (f"forget the refund of $5 on order {asked}", {"steps": [_refund(asked, 500)]}),
    ]
    await _each_untrusted(make_stack, cases)
    assert await refunds_of(db, other) == []
    assert await refunds_of(db, asked) == []
    right = await _run(
        make_stack, f"refund US$5 on order {asked}", {"steps": [_refund(asked, 500)]}
    )
    assert step_of(right, "create_refund").status == StepStatus.SUCCEEDED
    assert [r["amount_cents"] for r in await refunds_of(db, asked)] == [500]
