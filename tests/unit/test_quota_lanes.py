"""The gateway's lane decision without Redis: a tenant's place past its share is the
overflow lane, its watches aside; a Redis that fails while counting leaves the run
interactive (a lane orders work, it never refuses a run); a Redis that fails while the
slot is taken is `QuotasUnavailable` (503), with nothing started."""

from __future__ import annotations

from collections.abc import Sequence
from typing import cast

import pytest
import redis.asyncio as aioredis
from redis.exceptions import ConnectionError as RedisConnectionError
from temporalio.client import Client

from agentkeel.activities.quota_leases import Slot
from agentkeel.gateway.quota_limits import QuotaLimits
from agentkeel.gateway.quotas import Quotas, QuotasUnavailable
from agentkeel.schemas.gateway import QuotaKind
from agentkeel.schemas.lanes import Lane


class FakeLeases:
    """Leases whose counts are set by the test: `place` runs of the tenant once taken."""

    def __init__(self, place: int, watches: int = 0) -> None:
        self.place, self.watches = place, watches
        self.take_fails = self.count_fails = False

    async def take_counted(
        self, slots: Sequence[Slot], member: str, ttl_s: float
    ) -> tuple[Slot | None, list[int]]:
        if self.take_fails:
            raise RedisConnectionError("Timeout connecting to server")
        return None, [1, self.place]

    async def count(self, key: str) -> int:
        if self.count_fails:
            raise RedisConnectionError("Timeout reading from socket")
        return self.watches


def quotas(leases: FakeLeases, share: int) -> Quotas:
    limits = QuotaLimits(
        per_key=dict.fromkeys(QuotaKind, 0),
        per_tenant=dict.fromkeys(QuotaKind, 0),
        lease_s=30,
        interactive_per_tenant=share,
    )
    q = Quotas(aioredis.Redis(), cast(Client, None), limits, "q")
    q.leases = leases  # type: ignore[assignment]
    return q


@pytest.mark.parametrize(
    ("place", "watches", "lane"),
    [(3, 0, Lane.INTERACTIVE), (4, 0, Lane.OVERFLOW), (5, 2, Lane.INTERACTIVE)],
)
async def test_a_place_past_the_share_is_the_overflow_lane_watches_aside(
    place: int, watches: int, lane: Lane
) -> None:
    lease = await quotas(FakeLeases(place, watches), share=3).reserve_run(
        "key", "acme", watching=False
    )
    assert lease.lane is lane


async def test_no_share_and_watches_never_count() -> None:
    leases = FakeLeases(place=50)
    assert (await quotas(leases, 0).reserve_run("k", "t", watching=False)).lane is Lane.INTERACTIVE
    assert (await quotas(leases, 3).reserve_run("k", "t", watching=True)).lane is Lane.AUTOMATION


async def test_redis_failing_while_counting_leaves_the_run_interactive() -> None:
    leases = FakeLeases(place=50)
    leases.count_fails = True
    lease = await quotas(leases, share=3).reserve_run("key", "acme", watching=False)
    assert lease.lane is Lane.INTERACTIVE


async def test_redis_failing_while_taking_the_slot_is_quotas_unavailable() -> None:
    leases = FakeLeases(place=1)
    leases.take_fails = True
    with pytest.raises(QuotasUnavailable, match="Redis did not answer"):
        await quotas(leases, share=3).reserve_run("key", "acme", watching=False)
