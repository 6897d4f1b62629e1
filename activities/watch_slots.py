"""A watch's quota slot, taken by the run that starts watching.

A request that asks for a watch up front (`options.watch_every_s`, a plan with a repeated
step) takes its watch slot at the gateway before it starts. One that asks in words ("tell
me when it ships") is known to be a watch only once its plan has a repeated step, so the
run takes the slot itself, before its first wait: the same sets in Redis, under the limits
the gateway publishes (`Quotas.publish_limits`), so every door counts one watch per watch.
The gateway's sweep then renews the slot while the run lives and lets it go when it ends.
With no gateway limits published (runs started only through the SDK), nothing is held.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import redis.asyncio as aioredis
from temporalio import activity

from agentkeel.activities.quota_leases import (
    Leases,
    Slot,
    limit_field,
    quota_limits_key,
    quota_prefix,
    scope_key,
)
from agentkeel.activities.redis_errors import REDIS_ERRORS
from agentkeel.schemas import names
from agentkeel.schemas.gateway import QuotaKind, QuotaScope
from agentkeel.schemas.lanes import WatchSlotHold

__all__ = ["WatchSlots"]

_OWNER = {QuotaScope.KEY: "its API key", QuotaScope.TENANT: "its tenant"}


class WatchSlots:
    def __init__(self, redis: aioredis.Redis, deployment: str) -> None:
        """`deployment`: the task queue the gateway counts under (`quota_prefix`)."""
        self._leases = Leases(redis)
        self._prefix = quota_prefix(deployment)
        self._limits_key = quota_limits_key(deployment)

    def all(self) -> list[Callable[..., Any]]:
        return [self.hold_watch_slot]

    @activity.defn(name=names.HOLD_WATCH_SLOT)
    async def hold_watch_slot(self, hold: WatchSlotHold) -> str | None:
        """Hold the run's watch slot; None when held (or no limit applies, or Redis is
        away: the quota store only counts, a watch is not refused for its outage), else
        why not."""
        try:
            return await self._hold(hold)
        except REDIS_ERRORS as exc:
            activity.logger.warning("watch slot not held (Redis): %s", exc)
            return None

    async def _hold(self, hold: WatchSlotHold) -> str | None:
        limits = {
            _text(k): float(v)
            for k, v in (await self._leases.redis.hgetall(self._limits_key)).items()
        }
        scopes = {QuotaScope.KEY: hold.usage_key, QuotaScope.TENANT: hold.tenant}
        slots = [
            Slot(
                scope_key(self._prefix, QuotaKind.WATCHES, scope, who),
                int(limits.get(limit_field(QuotaKind.WATCHES, scope), 0)),
            )
            for scope, who in scopes.items()
        ]
        if not any(slot.limit for slot in slots):
            return None
        full = await self._leases.take(slots, hold.workflow_id, limits.get("lease_s", 60.0))
        if full is None:
            return None
        scope = QuotaScope.KEY if full is slots[0] else QuotaScope.TENANT
        return (
            f"{_OWNER[scope]} has {full.limit} watching runs in flight, its most; "
            "this run will not watch"
        )


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value
