"""Deterministic demo data for the shop the agent serves.

`seed_demo_data` fills an empty, migrated database from `random.Random(20261130)`, all
timestamps anchored at `SEED_NOW` rather than the clock, so two seeded databases are
identical. Volumes: 800 customers, 200 products in 5 categories, 3 warehouses, stock for
every SKU in every warehouse (some zero), `orders` orders (ids 1001..1000+orders) of 1-5
distinct SKUs each, shipments for shipped and delivered orders, about 40 refunds and
25 knowledge-base articles.

Fixed facts that other code and tests rely on:

* customer 1 is Alice Martin, alice@example.com, tier 'gold', city 'Amsterdam'; she owns
  exactly orders 1001, 1002 and 1003, none of them refunded.
* order 1001 is 'shipped', 3 distinct SKUs (SKU-00001, SKU-00002, SKU-00003), tracking
  number 'TRK0000001001'; it is Alice's second newest order.
* order 1002 is 'processing', no shipment, 2 items: SKU-00004 (in stock) and SKU-00007,
  which has 0 available in every warehouse; it is Alice's newest order.
* order 1003 is 'delivered', tracking number 'TRK0000001003'.
* customer 2 is Bob Chen, bob@example.com, and owns at least one order.
* SKU-00001 has stock in every warehouse; warehouses are 'AMS', 'CHI' and 'SIN'.
* every shipment's tracking number is 'TRK' + the order id zero-padded to 10 digits, and
  its carrier is `carrier_for(tracking_number)`, the rule the carrier service uses too.
* seed refunds have idempotency keys 'seed:<n>'.
* the KB has an article titled 'Refund policy' saying refunds are accepted within 30 days.
"""

from __future__ import annotations

import hashlib
import random
from datetime import UTC, datetime, timedelta
from typing import Any

import asyncpg

from agentkeel.examples.shop.seed_data import (
    CATALOG,
    CITIES,
    FIRST_NAMES,
    KB_ARTICLES,
    LAST_NAMES,
    REFUND_REASONS,
)

__all__ = ["CARRIERS", "SEED_NOW", "carrier_for", "seed_demo_data", "tracking_number_for"]

SEED_NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
"""The seed's "now": every seeded timestamp lies before it."""

CARRIERS = ("PostNL", "UPS", "DHL Express", "FedEx")

_SEED = 20261130
_CUSTOMERS = 800
_PRODUCTS = 200
_OUT_OF_STOCK_SKU = "SKU-00007"
_ALWAYS_IN_STOCK = ("SKU-00001", "SKU-00004")
_WAREHOUSES = (("AMS", "Amsterdam"), ("CHI", "Chicago"), ("SIN", "Singapore"))


def tracking_number_for(order_id: int) -> str:
    """The seed's tracking number of an order's shipment."""
    return f"TRK{order_id:010d}"


def carrier_for(tracking_number: str) -> str:
    """The carrier handling a tracking number; shared by the seed and the carrier service."""
    digest = hashlib.sha256(tracking_number.encode()).digest()
    return CARRIERS[digest[0] % len(CARRIERS)]


async def seed_demo_data(conn: asyncpg.Connection, *, orders: int = 5000) -> bool:
    """Fill an empty, migrated database with the demo data described in the module docstring.

    Args:
        conn: A connection outside any transaction.
        orders: How many orders to create, 3 or more (ids 1001 to 1000 + orders).

    Returns:
        True if the data was inserted; False (and nothing done) if customers has rows.
    """
    if orders < 3:
        raise ValueError(f"orders must be at least 3, got {orders}")
    tables = _generate(random.Random(_SEED), orders)
    async with conn.transaction():
        # Serialises concurrent seeders: the second one waits, then sees rows and stops.
        await conn.execute("LOCK TABLE customers IN EXCLUSIVE MODE")
        if await conn.fetchval("SELECT EXISTS (SELECT 1 FROM customers)"):
            return False
        for table, (columns, records) in tables.items():
            await conn.copy_records_to_table(table, records=records, columns=columns)
        # Rows were copied with explicit ids: move each identity past them.
        for table, column in _IDENTITIES:
            await conn.execute(
                f"SELECT setval(pg_get_serial_sequence('{table}', '{column}'),"
                f" (SELECT max({column}) FROM {table}))"
            )
    return True


_IDENTITIES = (
    ("customers", "customer_id"),
    ("orders", "order_id"),
    ("shipments", "shipment_id"),
    ("refunds", "refund_id"),
    ("kb_articles", "article_id"),
)

_OrderRow = tuple[int, int, str, int, datetime]
"""order_id, customer_id, status, total_cents, placed_at"""
_Line = tuple[str, int]
"""sku, quantity"""

_ALICE_ORDERS: tuple[tuple[int, str, timedelta, list[_Line]], ...] = (
    (1001, "shipped", timedelta(days=3), [("SKU-00001", 1), ("SKU-00002", 2), ("SKU-00003", 1)]),
    (1002, "processing", timedelta(hours=20), [("SKU-00004", 1), (_OUT_OF_STOCK_SKU, 1)]),
    (1003, "delivered", timedelta(days=24), [("SKU-00005", 1)]),
)
"""order_id, status, age at SEED_NOW, lines"""


def _generate(rng: random.Random, n_orders: int) -> dict[str, tuple[list[str], list[Any]]]:
    """Every row to insert, by table in insertion order, with the columns they fill."""
    customers = _customers(rng)
    products = _products(rng)
    inventory = _inventory(rng, [sku for sku, *_ in products])
    orders, items = _orders(rng, n_orders, {sku: price for sku, _n, _c, price in products})
    shipped = [o for o in orders if o[2] in ("shipped", "delivered")]
    shipments = [
        (
            shipment_id,
            order_id,
            tracking_number_for(order_id),
            carrier_for(tracking_number_for(order_id)),
            min(placed_at + timedelta(hours=rng.randint(6, 40)), SEED_NOW),
        )
        for shipment_id, (order_id, _c, _s, _t, placed_at) in enumerate(shipped, start=1)
    ]
    articles = [(i, title, body) for i, (title, body) in enumerate(KB_ARTICLES, start=1)]
    return {
        "customers": (["customer_id", "name", "email", "tier", "city", "created_at"], customers),
        "products": (["sku", "name", "category", "price_cents"], products),
        "warehouses": (["code", "city"], list(_WAREHOUSES)),
        "inventory": (["sku", "warehouse", "available"], inventory),
        "orders": (["order_id", "customer_id", "status", "total_cents", "placed_at"], orders),
        "order_items": (["order_id", "line_no", "sku", "quantity", "unit_price_cents"], items),
        "shipments": (
            ["shipment_id", "order_id", "tracking_number", "carrier", "shipped_at"],
            shipments,
        ),
        "refunds": (
            [
                "refund_id",
                "order_id",
                "amount_cents",
                "reason",
                "status",
                "idempotency_key",
                "created_at",
            ],
            _refunds(rng, orders),
        ),
        "kb_articles": (["article_id", "title", "body"], articles),
    }


def _customers(rng: random.Random) -> list[tuple[int, str, str, str, str, datetime]]:
    start = SEED_NOW - timedelta(days=1500)
    rows = [
        (1, "Alice Martin", "alice@example.com", "gold", "Amsterdam", start),
        (2, "Bob Chen", "bob@example.com", "silver", "Singapore", start + timedelta(days=3)),
    ]
    seen: set[str] = set()
    for customer_id in range(3, _CUSTOMERS + 1):
        first, last = rng.choice(FIRST_NAMES), rng.choice(LAST_NAMES)
        local = f"{first}.{last}".lower().replace(" ", "").replace("ü", "ue").replace("'", "")
        email, n = f"{local}@example.com", 1
        while email in seen:
            n += 1
            email = f"{local}{n}@example.com"
        seen.add(email)
        tier = rng.choices(("standard", "silver", "gold"), weights=(70, 22, 8))[0]
        joined = start + timedelta(days=rng.uniform(0, 1400))
        rows.append((customer_id, f"{first} {last}", email, tier, rng.choice(CITIES), joined))
    return rows


def _products(rng: random.Random) -> list[tuple[str, str, str, int]]:
    names = [
        (category, f"{adjective} {noun}", price_range)
        for category, (adjectives, nouns, price_range) in CATALOG.items()
        for adjective in adjectives
        for noun in nouns
    ]
    rows = []
    for i, (category, name, (low, high)) in enumerate(rng.sample(names, _PRODUCTS), start=1):
        price = rng.randint(low // 100, high // 100) * 100 + 99  # prices end in .99
        rows.append((f"SKU-{i:05d}", name, category, price))
    return rows


def _inventory(rng: random.Random, skus: list[str]) -> list[tuple[str, str, int]]:
    rows = []
    for sku in skus:
        sold_out = sku == _OUT_OF_STOCK_SKU or rng.random() < 0.04
        for code, _city in _WAREHOUSES:
            if sku in _ALWAYS_IN_STOCK:
                available = rng.randint(5, 250)
            elif sold_out or rng.random() < 0.15:
                available = 0
            else:
                available = rng.randint(1, 250)
            rows.append((sku, code, available))
    return rows


def _orders(
    rng: random.Random, n_orders: int, prices: dict[str, int]
) -> tuple[list[_OrderRow], list[tuple[int, int, str, int, int]]]:
    """Alice's three fixed orders, then random ones whose ids grow with their placed_at."""
    skus = sorted(prices)
    minutes = sorted((rng.randint(30, 730 * 24 * 60) for _ in range(n_orders - 3)), reverse=True)
    randoms = []
    for i, age in enumerate(timedelta(minutes=m) for m in minutes):
        # Bob places the oldest random order, so he always has one; Alice has only hers.
        customer_id = 2 if i == 0 else rng.randint(2, _CUSTOMERS)
        quantities = rng.choices((1, 2, 3), weights=(75, 18, 7), k=5)
        lines = list(zip(rng.sample(skus, rng.randint(1, 5)), quantities, strict=False))
        randoms.append((1004 + i, customer_id, _status(rng, age), age, lines))
    orders: list[_OrderRow] = []
    items = []
    fixed = [(order_id, 1, status, age, lines) for order_id, status, age, lines in _ALICE_ORDERS]
    for order_id, customer_id, status, age, lines in fixed + randoms:
        for line_no, (sku, quantity) in enumerate(lines, start=1):
            items.append((order_id, line_no, sku, quantity, prices[sku]))
        total = sum(quantity * prices[sku] for sku, quantity in lines)
        orders.append((order_id, customer_id, status, total, SEED_NOW - age))
    return orders, items


def _status(rng: random.Random, age: timedelta) -> str:
    if age < timedelta(days=3):
        weights = (60, 35, 0, 5)
    elif age < timedelta(days=14):
        weights = (0, 50, 45, 5)
    else:
        weights = (0, 0, 93, 7)
    return rng.choices(("processing", "shipped", "delivered", "cancelled"), weights=weights)[0]


def _refunds(
    rng: random.Random, orders: list[_OrderRow]
) -> list[tuple[int, int, int, str, str, str, datetime]]:
    """Partial or full refunds of a few delivered orders, none of Alice's."""
    delivered = [o for o in orders if o[2] == "delivered" and o[1] != 1]
    chosen = sorted(rng.sample(delivered, min(40, len(delivered) // 20)))
    rows = []
    for n, (order_id, _c, _s, total, placed_at) in enumerate(chosen, start=1):
        amount = total * rng.randint(10, 100) // 100
        created = min(placed_at + timedelta(days=rng.randint(4, 25)), SEED_NOW)
        reason = rng.choice(REFUND_REASONS)
        rows.append((n, order_id, amount, reason, "issued", f"seed:{n}", created))
    return rows
