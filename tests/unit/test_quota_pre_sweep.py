"""A burst of watching starts by one key sweeps its runs once a second, not once each;
starts that come while that sweep runs wait for it; a failed sweep is tried again."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import cast

import pytest
import redis.asyncio as aioredis
from temporalio.client import Client

from agentkeel.gateway import quotas
from agentkeel.gateway.quota_limits import QuotaLimits
from agentkeel.gateway.quotas import Quotas
from agentkeel.schemas.gateway import QuotaKind


class CountingQuotas(Quotas):
    """Quotas whose sweep is counted and held until released (no Redis is reached)."""

    def __init__(self) -> None:
        limits = QuotaLimits(per_key=dict.fromkeys(QuotaKind, 1), per_tenant={}, lease_s=30)
        super().__init__(aioredis.Redis(), cast(Client, None), limits, "q")
        self.sweeps = 0
        self.go = asyncio.Event()
        self.fail = False

    async def sweep(self, keys: Sequence[str] | None = None) -> None:
        self.sweeps += 1
        await self.go.wait()
        if self.fail:
            raise ConnectionError("redis is down")


async def test_starts_during_a_sweep_wait_for_it_and_the_next_second_sweeps_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    now = [100.0]
    monkeypatch.setattr(quotas.time, "monotonic", lambda: now[0])
    q = CountingQuotas()
    burst = [asyncio.create_task(q._pre_sweep(["runs:key:a"])) for _ in range(5)]
    for _ in range(5):
        await asyncio.sleep(0)
    assert q.sweeps == 1 and not any(t.done() for t in burst), "all wait for the one sweep"
    q.go.set()
    await asyncio.gather(*burst)
    await q._pre_sweep(["runs:key:a"])
    assert q.sweeps == 1, "swept just now"
    now[0] += quotas.PRE_SWEEP_GAP_S
    await q._pre_sweep(["runs:key:a"])
    assert q.sweeps == 2


async def test_a_failed_sweep_is_not_noted_as_done() -> None:
    q = CountingQuotas()
    q.go.set()
    q.fail = True
    with pytest.raises(ConnectionError):
        await q._pre_sweep(["runs:key:a"])
    q.fail = False
    await q._pre_sweep(["runs:key:a"])
    assert q.sweeps == 2
