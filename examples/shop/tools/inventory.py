"""Stock by warehouse: `check_inventory` (calls arriving together go as one query)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta
from typing import Any

import asyncpg
from pydantic import BaseModel, Field
from temporalio.exceptions import ApplicationError

from agentkeel import ActorScoped, ToolArgs, ToolCall, ToolContext, not_found, tool
from agentkeel.examples.shop import queries as q
from agentkeel.examples.shop.downstreams import ORDERS_DB
from agentkeel.examples.shop.resources import shop


class CheckInventoryArgs(ToolArgs):
    sku: str = Field(min_length=1, max_length=32)


class CheckInventoryInput(CheckInventoryArgs, ActorScoped):
    """What the activity receives: the arguments plus what the workflow adds (the same
    fields as the tool's own `input_model`; named here for stand-ins and tests)."""


class WarehouseStock(BaseModel):
    warehouse: str
    available: int


class Inventory(BaseModel):
    sku: str
    product_name: str
    total_available: int
    in_stock: bool
    warehouses: list[WarehouseStock]


def _inventory(out: dict[str, Any]) -> str:
    where = ", ".join(f"{w['warehouse']} {w['available']}" for w in out["warehouses"])
    if not out["in_stock"]:
        return f"{out['sku']} ({out['product_name']}) is out of stock."
    return f"{out['sku']} ({out['product_name']}): {out['total_available']} available ({where})."


async def check_inventory_many(
    calls: Sequence[ToolCall[CheckInventoryArgs]],
) -> list[Inventory | ApplicationError]:
    """`check_inventory` for many SKUs in one query; each call its own result or error."""
    if not calls:
        return []
    skus = [call.args.sku.strip().upper() for call in calls]
    rows = await shop(calls[0].ctx).pool.fetch(q.CHECK_INVENTORY_MANY, sorted(set(skus)))
    by_sku: dict[str, list[asyncpg.Record]] = {}
    for row in rows:
        by_sku.setdefault(row["sku"], []).append(row)
    return [_stock(sku, by_sku.get(sku, [])) for sku in skus]


@tool(
    downstream=ORDERS_DB,
    cache_ttl=timedelta(seconds=5),
    max_concurrency=4,
    speculate_arg="sku",
    many=check_inventory_many,
    render=_inventory,
)
async def check_inventory(args: CheckInventoryArgs, ctx: ToolContext) -> Inventory:
    """Check the available stock of a SKU across warehouses."""
    [result] = await check_inventory_many([ToolCall(args, ctx)])
    if isinstance(result, BaseException):
        raise result
    return result


def _stock(sku: str, rows: Sequence[asyncpg.Record]) -> Inventory | ApplicationError:
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
