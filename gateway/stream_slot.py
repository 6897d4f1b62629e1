"""A stream's quota slot while the stream is open (`Quotas.open_stream`)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass
from typing import TYPE_CHECKING

from agentkeel.activities.redis_errors import REDIS_ERRORS

if TYPE_CHECKING:
    from agentkeel.gateway.quota_limits import Lease
    from agentkeel.gateway.quotas import Quotas


@dataclass
class OpenStream:
    """A stream's slot while it is open: renewed once the stream has begun (`begin`), let
    go at `close`, or at the first renewal if the stream never began (its client left
    before the response started, so nothing would close it)."""

    quotas: Quotas
    lease: Lease
    begun: bool = False
    renewing: asyncio.Task[None] | None = None

    def begin(self) -> None:
        self.begun = True

    async def renew(self) -> None:
        limits, leases = self.quotas.limits, self.quotas.leases
        while True:
            await asyncio.sleep(limits.sweep_every_s)
            if not self.begun:
                await self.quotas.release(self.lease)
                return
            with suppress(*REDIS_ERRORS):
                await leases.renew(self.lease.keys, self.lease.member, limits.lease_s)

    async def close(self) -> None:
        if self.renewing is not None:
            self.renewing.cancel()
            await asyncio.gather(self.renewing, return_exceptions=True)
        await self.quotas.release(self.lease)


@asynccontextmanager
async def following(quotas: Quotas | None, caller: str, tenant: str) -> AsyncIterator[None]:
    """A stream slot held while a caller waits on a run (`POST /v1/runs?wait=true`, MCP's
    waiting `start_run`): following a run counts as a stream at every door. `OverQuota`
    when its key's or tenant's streams are full."""
    if quotas is None:
        yield
        return
    slot = await quotas.open_stream(caller, tenant)
    slot.begin()
    try:
        yield
    finally:
        await slot.close()
