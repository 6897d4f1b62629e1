"""The example shop's tool activities, by name, over a given pool and carrier: what the tool
tests call directly and what stand-ins wrap (the worker builds the same from its domain)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import asyncpg
import httpx

from agentkeel.activities.tools.functions import FunctionTools
from agentkeel.examples.shop import domain as shop
from agentkeel.examples.shop.carrier_api import CarrierApi
from agentkeel.examples.shop.resources import ShopResources
from agentkeel.schemas.tools import ACTIVITY_TOOLS
from agentkeel.workers.stand_ins import activity_name


class ShopActivities:
    """`acts.get_order(args)`, `acts.check_inventory_many(calls)`, `acts.all_activities()`."""

    def __init__(self, pool: asyncpg.Pool, http: httpx.AsyncClient, carrier_url: str) -> None:
        resources = ShopResources(pool=pool, carrier=CarrierApi(http, carrier_url))
        self.tools = FunctionTools(ACTIVITY_TOOLS, resources, shop.is_scoped)
        self._by_name = {activity_name(a): a for a in self.tools.all_activities()}
        self._many = {f"{n}_many": m for n, m in self.tools.batch_calls().items()}

    def all_activities(self) -> list[Callable[..., Any]]:
        return list(self._by_name.values())

    def batch_calls(self) -> dict[str, Callable[[Sequence[Any]], Any]]:
        return self.tools.batch_calls()

    def __getattr__(self, name: str) -> Callable[..., Any]:
        found = self._by_name.get(name) or self._many.get(name)
        if found is None:
            raise AttributeError(name)
        return found
