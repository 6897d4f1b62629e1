"""A burst of watching starts by one key sweeps its runs once a second, not once each."""

from __future__ import annotations

from typing import cast

import redis.asyncio as aioredis
from temporalio.client import Client

from agentkeel.gateway import quotas
from agentkeel.gateway.quotas import QuotaLimits, Quotas
from agentkeel.schemas.gateway import QuotaKind


def _quotas() -> Quotas:
    limits = QuotaLimits(per_key=dict.fromkeys(QuotaKind, 1), per_tenant={}, lease_s=30)
    # Neither client is reached: `_due` only reads the clock.
    return Quotas(aioredis.Redis(), cast(Client, None), limits, "q")


def test_keys_swept_ahead_of_a_start_wait_out_the_gap(monkeypatch) -> None:
    now = [100.0]
    monkeypatch.setattr(quotas.time, "monotonic", lambda: now[0])
    q = _quotas()
    assert q._due(["a", "b"]) == ["a", "b"]
    now[0] += quotas.PRE_SWEEP_GAP_S / 2
    assert q._due(["a", "b", "c"]) == ["c"]
    now[0] += quotas.PRE_SWEEP_GAP_S
    assert q._due(["a", "c"]) == ["a", "c"]
