"""The tool-result cache writes its entry behind the call, on real Redis: the caller has its
value before the write lands, a read of the same key in the process waits for that write,
and a write that fails costs only a later read of the source."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field, replace
from datetime import timedelta
from typing import Any

from agentkeel.activities.cache.backend import CacheBackend
from agentkeel.activities.cache.tool_results import ToolResultCache, tenant_of
from agentkeel.examples.shop.tools import KbResult, SearchKbArgs
from agentkeel.schemas.tools import TOOLS
from agentkeel.settings.connections import redis_client

SPEC = replace(TOOLS["search_kb"], cache_ttl=timedelta(minutes=1))


class HeldBackend(CacheBackend):
    """A real backend whose entry writes wait for `release` (or fail, with `broken`)."""

    def __init__(self, *args: Any, broken: bool = False, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.release = asyncio.Event()
        self.broken = broken
        self.puts = 0

    async def put(self, *args: Any, **kwargs: Any) -> bool:
        self.puts += 1
        await self.release.wait()
        if self.broken:
            raise RuntimeError("the write failed")
        return await super().put(*args, **kwargs)


@dataclass
class Held:
    client: Any
    backend: HeldBackend
    cache: ToolResultCache
    calls: list[str] = field(default_factory=list)

    async def compute(self, args: SearchKbArgs) -> KbResult:
        self.calls.append(args.query)
        return KbResult(query=f"{args.query}#{len(self.calls)}", hits=[])

    async def ask(self, args: SearchKbArgs) -> KbResult:
        return await self.cache.get_or_compute(SPEC, args, self.compute)


@asynccontextmanager
async def held_cache(redis_url: str, *, broken: bool = False) -> AsyncIterator[Held]:
    """A cache over a `HeldBackend` on real Redis; its writes released and it closed after."""
    client = redis_client(redis_url)
    backend = HeldBackend(client, index_ttl=timedelta(minutes=1), broken=broken)
    held = Held(client, backend, ToolResultCache(backend))
    try:
        yield held
    finally:
        backend.release.set()
        await held.cache.close()
        await client.aclose()


def question(name: str) -> SearchKbArgs:
    return SearchKbArgs(query=f"{name}-{uuid.uuid4().hex}")


async def test_the_caller_has_its_value_before_the_entry_is_written(redis_url: str) -> None:
    async with held_cache(redis_url) as held:
        args = question("behind")
        first = await asyncio.wait_for(held.ask(args), timeout=5)
        assert first.query.endswith("#1"), "returned while its entry's write is still held"
        again = asyncio.create_task(held.ask(args))
        await asyncio.sleep(0.1)
        assert held.backend.puts == 1
        assert not again.done(), "a read of the same key waits for the write under way"
        held.backend.release.set()
        second = await asyncio.wait_for(again, timeout=5)
        assert second.query.endswith("#1"), "and then finds the entry"
        assert len(held.calls) == 1, "the source was read once"


async def test_a_write_that_fails_costs_only_a_later_read_of_the_source(redis_url: str) -> None:
    async with held_cache(redis_url, broken=True) as held:
        held.backend.release.set()
        args = question("behind-broken")
        assert (await held.ask(args)).query.endswith("#1")
        assert (await held.ask(args)).query.endswith("#2")
        assert len(held.calls) == 2, "nothing was cached, so the source was read again"


async def test_closing_waits_for_the_entries_still_being_written(redis_url: str) -> None:
    async with held_cache(redis_url) as held:
        args = question("behind-close")
        await asyncio.wait_for(held.ask(args), timeout=5)
        closing = asyncio.create_task(held.cache.close())
        await asyncio.sleep(0.05)
        assert not closing.done(), "a closing worker waits for the write under way"
        held.backend.release.set()
        await asyncio.wait_for(closing, timeout=5)
        held.cache = ToolResultCache(CacheBackend(held.client, index_ttl=timedelta(minutes=1)))
        assert (await held.ask(args)).query.endswith("#1")
        assert len(held.calls) == 1, "the entry was written before the close returned"


async def test_an_invalidation_while_the_write_is_held_wins(redis_url: str) -> None:
    """A refund landing between the read and its entry's write: nothing is stored, so the
    next read goes to the source."""
    spec = replace(TOOLS["get_order"], cache_ttl=timedelta(minutes=1))
    order_id = uuid.uuid4().int % 10**9 + 1
    args = spec.args_model.model_validate({"order_id": order_id})
    reads: list[int] = []

    async def read(call: Any) -> Any:
        reads.append(call.order_id)
        return spec.result_model.model_validate(
            {"order_id": call.order_id, "customer_id": 1, "status": "shipped",
             "total_cents": 100, "refunded_cents": 0, "placed_at": "2026-01-01",
             "items": []}
        )  # fmt: skip

    async with held_cache(redis_url) as held:
        await asyncio.wait_for(held.cache.get_or_compute(spec, args, read), timeout=5)
        await held.backend.invalidate([f"order_id:{order_id}"], tenant=tenant_of(args))
        held.backend.release.set()
        await asyncio.sleep(0.2)
        await asyncio.wait_for(held.cache.get_or_compute(spec, args, read), timeout=5)
        assert reads == [order_id, order_id], "the value read before the refund was not kept"
