"""The overflow lane's slots: how many runs a tenant started past its interactive share
execute at once, across every CPU worker of a deployment.

Priority orders a backlog only: once an overflow run holds a workflow task or an activity
slot it takes the CPU beside every interactive run, so a tenant that floods the gateway
still slows everyone's interactive runs by the work its runs do between theirs. The cap
is what the cache warmer's `max_parallel` is to the warmer: at most
`AGENTKEEL_OVERFLOW_RUNS_IN_FLIGHT` overflow runs past their start at once; the others
wait, durably, in their workflow (`workflows.overflow_gate`), in the order they came.

Two sorted sets in Redis per deployment (one hash tag, for a Redis Cluster): `held` (a
run's workflow id, scored by when its lease expires) and `waiting` (scored by when the run
first asked). A run that ends hands its slot to the oldest waiter in the same script,
and its workflow signals that waiter to look again (a signal only wakes it: what lets it
go on is the slot it then finds held in its name). A lease that is not given back (a run
terminated, or one that waits on a person past `SLOT_LEASE_S`) expires on its own, and
the waiters find the slot when they next look.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import redis.asyncio as aioredis
from temporalio import activity

from agentkeel.activities.quota_leases import quota_prefix
from agentkeel.activities.redis_errors import REDIS_ERRORS
from agentkeel.schemas import names
from agentkeel.schemas.lanes import OverflowSlotAsk, OverflowSlotGrant

__all__ = ["SLOT_LEASE_S", "OverflowSlots", "overflow_keys"]

SLOT_LEASE_S = 120.0
"""The longest a run holds its slot: longer than an overflow run's work takes (they are
interactive requests), shorter than a run that waits on an approval should hold others
back."""
WAITER_STALE_S = 3600.0
"""A waiter queued this long is dropped (a run terminated while it waited); one still
alive finds itself gone when it next asks, and queues again at the back."""

_ASK = """
local now, expiry, member, cap, stale, giving = tonumber(ARGV[1]), tonumber(ARGV[2]),
  ARGV[3], tonumber(ARGV[4]), tonumber(ARGV[5]), ARGV[6] == '1'
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now - stale)
if giving then
  redis.call('ZREM', KEYS[1], member)
elseif redis.call('ZSCORE', KEYS[1], member) then
  redis.call('ZREM', KEYS[2], member)
  return {1}
else
  redis.call('ZADD', KEYS[2], 'NX', now, member)
end
local answer = {0}
while redis.call('ZCARD', KEYS[1]) < cap do
  local head = redis.call('ZPOPMIN', KEYS[2])
  if #head == 0 then break end
  redis.call('ZADD', KEYS[1], expiry, head[1])
  if head[1] == member then answer[1] = 1 else answer[#answer + 1] = head[1] end
end
redis.call('PEXPIRE', KEYS[1], expiry - now)
redis.call('PEXPIRE', KEYS[2], stale)
return answer
"""
"""KEYS: held, waiting; ARGV: now and expiry (ms), the run, the cap, the waiters'
staleness (ms), 1 to give the run's slot back (else to ask for one). A run that asks
joins the queue (its first place kept: `NX`); then each free slot goes to the oldest
waiter. Returns {1 when the run holds a slot (taken now, or handed to it before), then
the other waiters just handed one, to be woken}."""


def overflow_keys(deployment: str) -> tuple[str, str]:
    """The `held` and `waiting` sets of one deployment (its task queue)."""
    prefix = f"{quota_prefix(deployment)}overflow:"
    return f"{prefix}held", f"{prefix}waiting"


class OverflowSlots:
    """The two local activities of the gate, on every CPU worker."""

    def __init__(self, redis: aioredis.Redis, deployment: str, cap: int) -> None:
        """`cap`: overflow runs past their start at once across the deployment (0: no cap,
        every overflow run goes on at once, ordered by its priority only)."""
        self._redis = redis
        self._keys = list(overflow_keys(deployment))
        self._cap = cap
        self._ask = redis.register_script(_ASK)

    def all(self) -> list[Callable[..., Any]]:
        return [self.take_overflow_slot, self.give_back_overflow_slot]

    @activity.defn(name=names.TAKE_OVERFLOW_SLOT)
    async def take_overflow_slot(self, ask: OverflowSlotAsk) -> OverflowSlotGrant:
        """Whether the run may go on now (`held`: it must give the slot back when it ends).
        No cap, or Redis away: it goes on holding nothing (a lane orders work, it never
        stalls a run on the store that only counts it)."""
        if self._cap <= 0:
            return OverflowSlotGrant(go_on=True, held=False)
        try:
            mine, woken = await self._asked(ask.workflow_id, giving=False)
        except REDIS_ERRORS as exc:
            activity.logger.warning("overflow slot not counted (Redis): %s", exc)
            return OverflowSlotGrant(go_on=True, held=False)
        return OverflowSlotGrant(go_on=mine, held=mine, woken=woken)

    @activity.defn(name=names.GIVE_BACK_OVERFLOW_SLOT)
    async def give_back_overflow_slot(self, ask: OverflowSlotAsk) -> list[str]:
        """Give the run's slot back; the waiters now holding a slot, to be woken."""
        try:
            _, woken = await self._asked(ask.workflow_id, giving=True)
        except REDIS_ERRORS as exc:  # the lease expires on its own
            activity.logger.warning("overflow slot not given back (Redis): %s", exc)
            return []
        return woken

    async def _asked(self, member: str, *, giving: bool) -> tuple[bool, list[str]]:
        now = int(time.time() * 1000)
        expiry = now + int(SLOT_LEASE_S * 1000)
        stale = int(WAITER_STALE_S * 1000)
        args: list[str | int] = [now, expiry, member, max(self._cap, 1), stale, int(giving)]
        mine, *woken = await self._ask(keys=self._keys, args=args)
        return bool(int(mine)), [w.decode() if isinstance(w, bytes) else str(w) for w in woken]
