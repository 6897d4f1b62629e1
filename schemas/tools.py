"""The tool catalog: argument and result models of every tool, declared once.

The workflow validates plans against these models (deterministically, inside
the workflow), the activities decode their inputs with them, and policies
describe them to models. A tool's name is its activity type name: a contract.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from datetime import timedelta
from functools import cache

from pydantic import BaseModel, ConfigDict, Field


class _Args(BaseModel):
    model_config = ConfigDict(extra="forbid")


# --- find_customer ---------------------------------------------------------------------------
class FindCustomerArgs(_Args):
    email: str = Field(min_length=3, max_length=254)


class Customer(BaseModel):
    customer_id: int
    name: str
    email: str
    tier: str
    city: str


# --- list_orders -----------------------------------------------------------------------------
class ListOrdersArgs(_Args):
    customer_id: int = Field(ge=1)
    limit: int = Field(default=5, ge=1, le=50)


class OrderSummary(BaseModel):
    order_id: int
    status: str
    total_cents: int
    placed_at: str


class OrderList(BaseModel):
    customer_id: int
    orders: list[OrderSummary]
    order_ids: list[int]


# --- get_order -------------------------------------------------------------------------------
class GetOrderArgs(_Args):
    order_id: int = Field(ge=1)


class OrderItem(BaseModel):
    sku: str
    product_name: str
    quantity: int
    unit_price_cents: int


class Order(BaseModel):
    order_id: int
    customer_id: int
    status: str
    total_cents: int
    refunded_cents: int
    placed_at: str
    items: list[OrderItem]
    tracking_number: str | None = None


# --- check_inventory -------------------------------------------------------------------------
class CheckInventoryArgs(_Args):
    sku: str = Field(min_length=1, max_length=32)


class WarehouseStock(BaseModel):
    warehouse: str
    available: int


class Inventory(BaseModel):
    sku: str
    product_name: str
    total_available: int
    in_stock: bool
    warehouses: list[WarehouseStock]


# --- track_shipment --------------------------------------------------------------------------
class TrackShipmentArgs(_Args):
    tracking_number: str = Field(min_length=1, max_length=64)


class TrackingEvent(BaseModel):
    at: str
    location: str
    description: str


class Tracking(BaseModel):
    tracking_number: str
    carrier: str
    status: str
    eta: str | None = None
    events: list[TrackingEvent] = Field(default_factory=list)


# --- search_kb -------------------------------------------------------------------------------
class SearchKbArgs(_Args):
    query: str = Field(min_length=1, max_length=500)
    limit: int = Field(default=3, ge=1, le=10)


class KbHit(BaseModel):
    article_id: int
    title: str
    snippet: str
    rank: float


class KbResult(BaseModel):
    query: str
    hits: list[KbHit]


# --- create_refund (side-effecting) ----------------------------------------------------------
class CreateRefundArgs(_Args):
    order_id: int = Field(ge=1)
    amount_cents: int = Field(ge=1)
    reason: str = Field(min_length=1, max_length=500)


class CreateRefundInput(CreateRefundArgs):
    """What the activity receives: the plan's arguments plus the scheduler's idempotency key."""

    idempotency_key: str = Field(min_length=1, max_length=200)


class Refund(BaseModel):
    refund_id: int
    order_id: int
    customer_id: int | None = None
    amount_cents: int
    status: str
    created: bool
    """False when this idempotency key had already refunded: the earlier refund is returned."""


# --- the catalog -----------------------------------------------------------------------------
@dataclass(frozen=True)
class ToolSpec:
    """Everything the scheduler, the activities and the policies need to know about a tool."""

    name: str
    description: str
    args_model: type[BaseModel]
    result_model: type[BaseModel]
    timeout: timedelta = timedelta(seconds=10)
    max_attempts: int = 3
    idempotent: bool = True
    """Safe to retry and to cache; false means side-effecting (needs an idempotency key)."""
    cache_ttl: timedelta | None = None
    max_concurrency: int | None = None
    """Per-tool cap within one run, on top of the run's cap."""
    expected_ms: int = 20
    """Typical latency, used to weigh the critical path when a cap holds steps back."""
    input_model: type[BaseModel] | None = None
    non_retryable_errors: tuple[str, ...] = field(default=("NotFound",))

    def __post_init__(self) -> None:
        if self.max_concurrency is not None and self.max_concurrency < 1:
            raise ValueError(f"{self.name}: max_concurrency must be at least 1")

    @property
    def activity_input_model(self) -> type[BaseModel]:
        return self.input_model or self.args_model


TOOLS: dict[str, ToolSpec] = {
    spec.name: spec
    for spec in (
        ToolSpec(
            name="find_customer",
            description="Find a customer by email address.",
            args_model=FindCustomerArgs,
            result_model=Customer,
            cache_ttl=timedelta(minutes=5),
        ),
        ToolSpec(
            name="list_orders",
            description="List a customer's most recent orders.",
            args_model=ListOrdersArgs,
            result_model=OrderList,
            cache_ttl=timedelta(seconds=30),
        ),
        ToolSpec(
            name="get_order",
            description="Get an order with its items, totals and tracking number.",
            args_model=GetOrderArgs,
            result_model=Order,
            cache_ttl=timedelta(seconds=30),
        ),
        ToolSpec(
            name="check_inventory",
            description="Check the available stock of a SKU across warehouses.",
            args_model=CheckInventoryArgs,
            result_model=Inventory,
            cache_ttl=timedelta(seconds=5),
            max_concurrency=4,
        ),
        ToolSpec(
            name="track_shipment",
            description="Get live tracking of a shipment from the carrier.",
            args_model=TrackShipmentArgs,
            result_model=Tracking,
            expected_ms=60,
            max_concurrency=3,
        ),
        ToolSpec(
            name="search_kb",
            description="Search the knowledge base of policy articles.",
            args_model=SearchKbArgs,
            result_model=KbResult,
            cache_ttl=timedelta(hours=1),
        ),
        ToolSpec(
            name="create_refund",
            description="Refund part or all of an order. Side-effecting: at most once per step.",
            args_model=CreateRefundArgs,
            result_model=Refund,
            input_model=CreateRefundInput,
            idempotent=False,
            max_concurrency=1,
            non_retryable_errors=("NotFound", "RefundRejected"),
        ),
    )
}


@cache
def catalog_version() -> str:
    """A short digest of everything about the tools that changes what a cached result means."""
    described = [
        {
            "name": spec.name,
            "args": spec.args_model.model_json_schema(),
            "result": spec.result_model.model_json_schema(),
            "idempotent": spec.idempotent,
            "ttl": spec.cache_ttl.total_seconds() if spec.cache_ttl else None,
        }
        for spec in TOOLS.values()
    ]
    return hashlib.sha256(json.dumps(described, sort_keys=True).encode()).hexdigest()[:12]
