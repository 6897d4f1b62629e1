"""agentkeel's side of `bench.peers`: a domain of four `agentkeel.tool` functions.

Written against the public API alone, as a business would write its own: typed arguments
and results, a result cache, speculation on the order id a question names, reads declared
fast enough to run as local activities. The bodies are the ones every system of the
benchmark shares (`bench.peer_fakes.run_tool`), so agentkeel's figure includes its whole
tool layer (the one door, argument checks, the result cache, the limiter) around the same
100 ms a peer's tool activity sleeps.

    AGENTKEEL_DOMAIN=bench.peer_domain:domain
"""

from __future__ import annotations

from datetime import timedelta

from pydantic import BaseModel, Field

from agentkeel import Domain, EntityPattern, FreeText, ToolArgs, tool
from bench.peer_fakes import run_tool

_CACHED = timedelta(minutes=10)
"""Every read is cached, as a deployment would cache them; each run's arguments are new
(`bench.peer_cases`), so the cache is paid for and never serves."""


class SearchArgs(ToolArgs):
    query: FreeText = Field(min_length=1, max_length=500)


class Hit(BaseModel):
    title: str
    snippet: str


class SearchResult(BaseModel):
    query: str
    hits: list[Hit]


class OrderArgs(ToolArgs):
    order_id: int = Field(ge=1, le=2**31 - 1)


class Item(BaseModel):
    sku: str
    product_name: str
    quantity: int


class Order(BaseModel):
    order_id: int
    status: str
    items: list[Item]
    tracking_number: str


class SkuArgs(ToolArgs):
    sku: str = Field(min_length=1, max_length=32)


class Stock(BaseModel):
    sku: str
    product_name: str
    available: int


class ParcelArgs(ToolArgs):
    tracking_number: str = Field(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9._-]+$")


class Parcel(BaseModel):
    tracking_number: str
    status: str
    location: str


@tool(cache_ttl=_CACHED, local=True, expected_ms=100)
async def search_kb(args: SearchArgs) -> SearchResult:
    """Search the knowledge base."""
    return SearchResult.model_validate(await run_tool("search_kb", args.model_dump()))


@tool(cache_ttl=_CACHED, local=True, expected_ms=100, speculate_arg="order_id")
async def get_order(args: OrderArgs) -> Order:
    """Look up an order with its items and tracking number."""
    return Order.model_validate(await run_tool("get_order", args.model_dump()))


@tool(cache_ttl=_CACHED, local=True, expected_ms=100)
async def check_inventory(args: SkuArgs) -> Stock:
    """Stock of a SKU."""
    return Stock.model_validate(await run_tool("check_inventory", args.model_dump()))


@tool(cache_ttl=_CACHED, local=True, expected_ms=100)
async def track_shipment(args: ParcelArgs) -> Parcel:
    """Where a shipment is."""
    return Parcel.model_validate(await run_tool("track_shipment", args.model_dump()))


domain = Domain(
    name="benchpeers",
    tools=(search_kb, get_order, check_inventory, track_shipment),
    persona="You answer questions about orders, stock, parcels and help articles.",
    intents={"lookup": ("search_kb", "get_order", "check_inventory", "track_shipment")},
    entity_args=("order_id",),
    entity_patterns=(EntityPattern("order_id", r"\b(\d{5,})\b", guard=False),),
)
