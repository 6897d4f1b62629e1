"""What the shop's tools use: the worker's Postgres pool and the carrier's API client."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

import asyncpg
from pydantic import BaseModel, ConfigDict, Field

from agentkeel import ToolContext, ToolSetup
from agentkeel.examples.shop.carrier_api import CarrierApi


class ShopSettings(BaseModel):
    """The shop's own settings, from `AGENTKEEL_SHOP_<FIELD>`."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    carrier_url: str = Field(min_length=1)
    """Base URL of the carrier-tracking HTTP service (`agentkeel up` starts a stand-in and
    sets it)."""


@dataclass(frozen=True)
class ShopResources:
    pool: asyncpg.Pool
    carrier: CarrierApi


@asynccontextmanager
async def shop_resources(setup: ToolSetup) -> AsyncIterator[ShopResources]:
    """Opened once per CPU worker: nothing of its own to close (the pools are the worker's)."""
    settings = setup.settings
    assert isinstance(settings, ShopSettings)
    yield ShopResources(pool=setup.pool, carrier=CarrierApi(setup.http, settings.carrier_url))


def shop(ctx: ToolContext) -> ShopResources:
    """The shop's resources of a call, typed."""
    resources = ctx.resources
    assert isinstance(resources, ShopResources), "the shop's tools run on a shop worker"
    return resources
