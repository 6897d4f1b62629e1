"""The read tools' activities against real Postgres and the real carrier service, on one
seeded database."""

from __future__ import annotations

import typing
from collections.abc import AsyncIterator

import asyncpg
import httpx
import pytest
from temporalio.exceptions import ApplicationError

from agentkeel.examples.shop.seed import carrier_for
from agentkeel.examples.shop.tools import (
    CheckInventoryInput,
    CreateRefundInput,
    FindCustomerInput,
    GetOrderInput,
    ListOrdersInput,
    SearchKbInput,
    TrackShipmentInput,
)
from agentkeel.schemas.tools import ACTIVITY_TOOLS, TOOLS
from agentkeel.settings.ports import free_port
from tests.support.shop_tools import ShopActivities
from tests.support.tool_fixtures import carrier_url as carrier_url
from tests.support.tool_fixtures import http as http
from tests.support.tool_fixtures import run
from tests.support.tool_fixtures import seeded_dsn as seeded_dsn


@pytest.fixture(scope="module")
async def pool(seeded_dsn: str) -> AsyncIterator[asyncpg.Pool]:
    async with asyncpg.create_pool(seeded_dsn, min_size=1, max_size=4) as p:
        yield p


@pytest.fixture(scope="module")
def acts(pool: asyncpg.Pool, http: httpx.AsyncClient, carrier_url: str) -> ShopActivities:
    return ShopActivities(pool, http, carrier_url)


# --- read tools ------------------------------------------------------------------------------
def test_activities_match_the_catalog(acts: ShopActivities) -> None:
    names = []
    for method in acts.all_activities():
        name = method.__temporal_activity_definition.name  # type: ignore[attr-defined]
        hints = typing.get_type_hints(method)
        assert hints["return"] is TOOLS[name].result_model
        assert [h for k, h in hints.items() if k != "return"] == [TOOLS[name].activity_input_model]
        names.append(name)
    assert sorted(names) == sorted(ACTIVITY_TOOLS)


async def test_find_customer(acts: ShopActivities) -> None:
    alice = await run(acts.find_customer, FindCustomerInput(email=" Alice@Example.com "))
    assert alice.model_dump() == {
        "customer_id": 1,
        "name": "Alice Martin",
        "email": "alice@example.com",
        "tier": "gold",
        "city": "Amsterdam",
    }
    bob = await run(acts.find_customer, FindCustomerInput(email="bob@example.com"))
    assert (bob.customer_id, bob.name) == (2, "Bob Chen")


async def test_list_orders_newest_first(acts: ShopActivities) -> None:
    alice = await run(acts.list_orders, ListOrdersInput(customer_id=1))
    assert alice.order_ids == [1002, 1001, 1003]
    assert [o.status for o in alice.orders] == ["processing", "shipped", "delivered"]
    bob = await run(acts.list_orders, ListOrdersInput(customer_id=2, limit=2))
    assert len(bob.orders) == len(bob.order_ids) >= 1
    assert [o.placed_at for o in bob.orders] == sorted(
        (o.placed_at for o in bob.orders), reverse=True
    )
    assert (await run(acts.list_orders, ListOrdersInput(customer_id=1, limit=1))).order_ids == [
        1002
    ]


async def test_get_order_shipped(acts: ShopActivities) -> None:
    order = await run(acts.get_order, GetOrderInput(order_id=1001))
    assert (order.customer_id, order.status, order.refunded_cents) == (1, "shipped", 0)
    assert len({item.sku for item in order.items}) == len(order.items) == 3
    assert order.total_cents == sum(i.quantity * i.unit_price_cents for i in order.items) > 0
    assert all(item.product_name for item in order.items)
    assert order.tracking_number == "TRK0000001001"
    assert order.placed_at.endswith("+00:00")


async def test_get_order_processing_with_an_out_of_stock_item(acts: ShopActivities) -> None:
    order = await run(acts.get_order, GetOrderInput(order_id=1002))
    assert (order.status, order.tracking_number, len(order.items)) == ("processing", None, 2)
    stock = [await run(acts.check_inventory, CheckInventoryInput(sku=i.sku)) for i in order.items]
    assert sorted(s.in_stock for s in stock) == [False, True]
    out = next(s for s in stock if not s.in_stock)
    assert [w.available for w in out.warehouses] == [0, 0, 0]


async def test_get_order_delivered(acts: ShopActivities) -> None:
    order = await run(acts.get_order, GetOrderInput(order_id=1003))
    assert (order.status, order.tracking_number) == ("delivered", "TRK0000001003")


async def test_check_inventory(acts: ShopActivities) -> None:
    stock = await run(acts.check_inventory, CheckInventoryInput(sku="sku-00001"))
    assert stock.sku == "SKU-00001"
    assert [w.warehouse for w in stock.warehouses] == ["AMS", "CHI", "SIN"]
    assert stock.total_available == sum(w.available for w in stock.warehouses) > 0
    assert stock.in_stock and stock.product_name


async def test_search_kb(acts: ShopActivities) -> None:
    result = await run(acts.search_kb, SearchKbInput(query="how do refunds work"))
    assert result.query == "how do refunds work"
    assert result.hits[0].title == "Refund policy"
    assert "30 days" in result.hits[0].snippet
    assert [h.rank for h in result.hits] == sorted((h.rank for h in result.hits), reverse=True)
    # No article holds every word: the any-word fallback still answers.
    loose = await run(
        acts.search_kb, SearchKbInput(query="my headphones broke, money back?", limit=5)
    )
    assert loose.hits and len(loose.hits) <= 5
    nothing = await run(acts.search_kb, SearchKbInput(query="zyxwvut qqqq"))
    assert nothing.hits == []


async def test_track_shipment(acts: ShopActivities, pool: asyncpg.Pool) -> None:
    tracking = await run(acts.track_shipment, TrackShipmentInput(tracking_number="TRK0000001001"))
    assert tracking.tracking_number == "TRK0000001001"
    assert tracking.carrier == carrier_for("TRK0000001001")
    assert tracking.carrier == await pool.fetchval(
        "SELECT carrier FROM shipments WHERE tracking_number = 'TRK0000001001'"
    )
    assert tracking.events and tracking.status in ("in_transit", "out_for_delivery", "delivered")
    again = await run(acts.track_shipment, TrackShipmentInput(tracking_number="TRK0000001001"))
    assert again == tracking


@pytest.mark.parametrize(
    ("tool", "arg", "message"),
    [
        ("find_customer", FindCustomerInput(email="nobody@example.com"), "nobody@example.com"),
        ("list_orders", ListOrdersInput(customer_id=99999), "customer 99999 not found"),
        ("get_order", GetOrderInput(order_id=9999999), "order 9999999 not found"),
        ("check_inventory", CheckInventoryInput(sku="SKU-99999"), "SKU-99999"),
        ("track_shipment", TrackShipmentInput(tracking_number="TRK123"), "TRK123"),
        (
            "create_refund",
            CreateRefundInput(order_id=9999999, amount_cents=1, reason="x", idempotency_key="k"),
            "order 9999999 not found",
        ),
    ],
)
async def test_missing_entities_are_non_retryable_not_found(
    acts: ShopActivities, tool: str, arg: typing.Any, message: str
) -> None:
    with pytest.raises(ApplicationError) as caught:
        await run(getattr(acts, tool), arg)
    assert (caught.value.type, caught.value.non_retryable) == ("NotFound", True)
    assert message in str(caught.value)


async def test_track_shipment_with_the_carrier_down_is_retryable(pool: asyncpg.Pool) -> None:
    async with httpx.AsyncClient(timeout=2) as client:
        acts = ShopActivities(pool, client, f"http://127.0.0.1:{free_port()}")
        with pytest.raises(httpx.ConnectError):
            await run(acts.track_shipment, TrackShipmentInput(tracking_number="TRK0000001001"))
