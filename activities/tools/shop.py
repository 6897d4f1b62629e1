"""The tool activities: one per tool of `schemas.tools.TOOLS`, registered under the tool's name.

Each activity takes the tool's `activity_input_model` and returns its `result_model`. A missing
entity raises a non-retryable `ApplicationError` of type "NotFound"; a refund that may not be
made raises "RefundRejected". Everything else (a database or carrier outage) raises a retryable
error and Temporal retries it: the pool and the HTTP client have no retries of their own.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import asyncpg
import httpx
from temporalio import activity
from temporalio.exceptions import ApplicationError

from agentkeel.activities.heartbeat import heartbeating
from agentkeel.activities.tools import queries as q
from agentkeel.activities.tools.access import is_customer, require_owner
from agentkeel.activities.tools.carrier_api import CarrierApi, not_found
from agentkeel.schemas import errors
from agentkeel.schemas.tools import (
    CHECK_INVENTORY,
    CREATE_REFUND,
    FIND_CUSTOMER,
    GET_ORDER,
    LIST_ORDERS,
    SEARCH_KB,
    TRACK_SHIPMENT,
    CheckInventoryInput,
    CreateRefundInput,
    Customer,
    FindCustomerInput,
    GetOrderInput,
    Inventory,
    KbHit,
    KbResult,
    ListOrdersInput,
    Order,
    OrderItem,
    OrderList,
    OrderSummary,
    Refund,
    SearchKbInput,
    Tracking,
    TrackShipmentInput,
    WarehouseStock,
)

__all__ = ["ToolActivities"]

SIDE_EFFECT_HEARTBEAT_EVERY_S = 0.5
"""Well inside the tool heartbeat timeout (`workflows.timeouts.TOOL_HEARTBEAT`)."""


class ToolActivities:
    """Tool activities over the shop database and the carrier-tracking service.

    Args:
        pool: The shop database; shared by every activity of the worker.
        http: A pooled client for the carrier service, built with its own retries off.
        carrier_url: Base URL of the carrier service, e.g. `http://127.0.0.1:8787`.
    """

    def __init__(self, pool: asyncpg.Pool, http: httpx.AsyncClient, carrier_url: str) -> None:
        self._pool = pool
        self._carrier = CarrierApi(http, carrier_url)

    def all_activities(self) -> list[Callable[..., Any]]:
        """The bound activity methods, one per tool, for `Worker(activities=...)`."""
        return [
            self.find_customer,
            self.list_orders,
            self.get_order,
            self.check_inventory,
            self.track_shipment,
            self.search_kb,
            self.create_refund,
        ]

    def batch_calls(self) -> dict[str, Callable[[Sequence[Any]], Any]]:
        """For each tool the catalog marks `batch`: the function serving many calls at once."""
        return {
            CHECK_INVENTORY.name: self.check_inventory_many,
            TRACK_SHIPMENT.name: self.track_shipment_many,
        }

    @activity.defn(name=FIND_CUSTOMER.name)
    async def find_customer(self, args: FindCustomerInput) -> Customer:
        """Find a customer by email address (case-insensitive)."""
        row = await self._pool.fetchrow(q.FIND_CUSTOMER, args.email.strip().lower())
        require_owner(args.actor, row and row["customer_id"], f"the customer {args.email!r}")
        if row is None:
            raise not_found(f"customer with email {args.email!r}")
        return Customer.model_validate(dict(row))

    @activity.defn(name=LIST_ORDERS.name)
    async def list_orders(self, args: ListOrdersInput) -> OrderList:
        """List a customer's most recent orders, newest first."""
        require_owner(args.actor, args.customer_id, f"the orders of customer {args.customer_id}")
        rows = await self._pool.fetch(q.LIST_ORDERS, args.customer_id, args.limit)
        if not rows:
            raise not_found(f"customer {args.customer_id}")
        orders = [
            OrderSummary(
                order_id=row["order_id"],
                status=row["status"],
                total_cents=row["total_cents"],
                placed_at=row["placed_at"].isoformat(),
            )
            for row in rows
            if row["order_id"] is not None
        ]
        return OrderList(
            customer_id=args.customer_id,
            orders=orders,
            order_ids=[order.order_id for order in orders],
        )

    @activity.defn(name=GET_ORDER.name)
    async def get_order(self, args: GetOrderInput) -> Order:
        """Get an order with its items, the amount refunded so far and its tracking number."""
        async with self._pool.acquire() as conn:
            row = await conn.fetchrow(q.GET_ORDER, args.order_id)
            require_owner(args.actor, row and row["customer_id"], f"order {args.order_id}")
            if row is None:
                raise not_found(f"order {args.order_id}")
            items = await conn.fetch(q.ORDER_ITEMS, args.order_id)
        return Order(
            order_id=row["order_id"],
            customer_id=row["customer_id"],
            status=row["status"],
            total_cents=row["total_cents"],
            refunded_cents=row["refunded_cents"],
            placed_at=row["placed_at"].isoformat(),
            items=[OrderItem.model_validate(dict(item)) for item in items],
            tracking_number=row["tracking_number"],
        )

    @activity.defn(name=CHECK_INVENTORY.name)
    async def check_inventory(self, args: CheckInventoryInput) -> Inventory:
        """Check a SKU's available stock in every warehouse."""
        [result] = await self.check_inventory_many([args])
        if isinstance(result, BaseException):
            raise result
        return result

    async def check_inventory_many(
        self, calls: Sequence[CheckInventoryInput]
    ) -> list[Inventory | ApplicationError]:
        """`check_inventory` for many SKUs in one query; each call its own result or error."""
        skus = [args.sku.strip().upper() for args in calls]
        rows = await self._pool.fetch(q.CHECK_INVENTORY_MANY, sorted(set(skus)))
        by_sku: dict[str, list[asyncpg.Record]] = {}
        for row in rows:
            by_sku.setdefault(row["sku"], []).append(row)
        return [_inventory(sku, by_sku.get(sku, [])) for sku in skus]

    @activity.defn(name=TRACK_SHIPMENT.name)
    async def track_shipment(self, args: TrackShipmentInput) -> Tracking:
        """Get live tracking from the carrier service."""
        number = args.tracking_number.strip()
        await self._check_shipment_owner(args, number)
        return await self._carrier.track(number)

    async def track_shipment_many(
        self, calls: Sequence[TrackShipmentInput]
    ) -> list[Tracking | BaseException]:
        """`track_shipment` for many parcels in one carrier request (its batch endpoint);
        each call is checked against its own actor and gets its own result or error."""
        numbers = [args.tracking_number.strip() for args in calls]
        results: dict[int, Tracking | BaseException] = {}
        for i, (args, number) in enumerate(zip(calls, numbers, strict=True)):
            try:
                await self._check_shipment_owner(args, number)
            except ApplicationError as exc:
                results[i] = exc
        asked = sorted({n for i, n in enumerate(numbers) if i not in results})
        if asked:
            answers = dict(zip(asked, await self._carrier.track_many(asked), strict=True))
            for i, number in enumerate(numbers):
                results.setdefault(i, answers[number])
        return [results[i] for i in range(len(calls))]

    async def _check_shipment_owner(self, args: TrackShipmentInput, number: str) -> None:
        if is_customer(args.actor):
            owner = await self._pool.fetchval(q.SHIPMENT_OWNER, number)
            require_owner(args.actor, owner, f"shipment {number!r}")

    @activity.defn(name=SEARCH_KB.name)
    async def search_kb(self, args: SearchKbInput) -> KbResult:
        """Full-text search of the knowledge base, best matches first."""
        async with self._pool.acquire() as conn:
            rows = await conn.fetch(q.SEARCH_KB_ALL_WORDS, args.query, args.limit)
            if not rows:
                rows = await conn.fetch(q.SEARCH_KB_ANY_WORD, args.query, args.limit)
        hits = [
            KbHit(
                article_id=row["article_id"],
                title=row["title"],
                snippet=row["snippet"],
                rank=row["rank"],
            )
            for row in rows
        ]
        return KbResult(query=args.query, hits=hits)

    @activity.defn(name=CREATE_REFUND.name)
    async def create_refund(self, args: CreateRefundInput) -> Refund:
        """Refund part or all of an order, at most once per idempotency key.

        The key's lookup, the checks and the insert share one transaction, under a lock on
        the order, and the key is unique: an attempt retried after an earlier attempt's commit
        (say its result was lost) finds that refund and returns it with `created=False`.
        """
        async with (
            heartbeating(SIDE_EFFECT_HEARTBEAT_EVERY_S),
            self._pool.acquire() as conn,
            conn.transaction(),
        ):
            order = await conn.fetchrow(q.LOCK_ORDER, args.order_id)
            require_owner(args.actor, order and order["customer_id"], f"order {args.order_id}")
            if order is None:
                raise not_found(f"order {args.order_id}")
            earlier = await conn.fetchrow(q.REFUND_BY_KEY, args.idempotency_key)
            if earlier is not None:
                return _earlier_refund(earlier, args, order["customer_id"])
            if order["status"] == "cancelled":
                raise _rejected(f"order {args.order_id} is cancelled and was never charged")
            refundable = order["total_cents"] - await conn.fetchval(q.REFUNDED_CENTS, args.order_id)
            if args.amount_cents > refundable:
                raise _rejected(
                    f"refund of {args.amount_cents} cents exceeds the {refundable} cents"
                    f" still refundable on order {args.order_id}"
                )
            row = await conn.fetchrow(
                q.INSERT_REFUND, args.order_id, args.amount_cents, args.reason, args.idempotency_key
            )
            if row is None:
                # The key was taken meanwhile by a refund of another order (which holds
                # another lock); this statement sees it now that its transaction committed.
                earlier = await conn.fetchrow(q.REFUND_BY_KEY, args.idempotency_key)
                return _earlier_refund(earlier, args, order["customer_id"])
        activity.logger.info("refund %s issued for order %s", row["refund_id"], args.order_id)
        return _refund(row, order["customer_id"], created=True)


def _earlier_refund(row: asyncpg.Record, args: CreateRefundInput, customer_id: int) -> Refund:
    if row["order_id"] != args.order_id or row["amount_cents"] != args.amount_cents:
        # Names nothing of that refund: it may belong to someone else.
        raise _rejected(
            f"idempotency key {args.idempotency_key!r} was already used for a different refund"
        )
    return _refund(row, customer_id, created=False)


def _refund(row: asyncpg.Record, customer_id: int, *, created: bool) -> Refund:
    return Refund(
        refund_id=row["refund_id"],
        order_id=row["order_id"],
        customer_id=customer_id,
        amount_cents=row["amount_cents"],
        status=row["status"],
        created=created,
    )


def _inventory(sku: str, rows: Sequence[asyncpg.Record]) -> Inventory | ApplicationError:
    if not rows:
        return not_found(f"product {sku}")
    warehouses = [
        WarehouseStock(warehouse=row["warehouse"], available=row["available"])
        for row in rows
        if row["warehouse"] is not None
    ]
    total = sum(stock.available for stock in warehouses)
    return Inventory(
        sku=sku,
        product_name=rows[0]["product_name"],
        total_available=total,
        in_stock=total > 0,
        warehouses=warehouses,
    )


def _rejected(message: str) -> ApplicationError:
    return ApplicationError(message, type=errors.REFUND_REJECTED, non_retryable=True)
