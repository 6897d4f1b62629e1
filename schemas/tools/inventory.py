"""Stock by warehouse: `check_inventory`."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from pydantic import BaseModel, Field

from agentkeel.schemas.tools.downstreams import ORDERS_DB
from agentkeel.schemas.tools.spec import ActorScoped, ToolArgs, ToolSpec


class CheckInventoryArgs(ToolArgs):
    sku: str = Field(min_length=1, max_length=32)


class CheckInventoryInput(CheckInventoryArgs, ActorScoped):
    """What the activity receives."""


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


CHECK_INVENTORY = ToolSpec(
    name="check_inventory",
    downstream=ORDERS_DB,
    batch=True,
    description="Check the available stock of a SKU across warehouses.",
    args_model=CheckInventoryArgs,
    input_model=CheckInventoryInput,
    result_model=Inventory,
    cache_ttl=timedelta(seconds=5),
    max_concurrency=4,
    speculate_arg="sku",
    render=_inventory,
)
