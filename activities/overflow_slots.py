"""The overflow lane's slots: how many runs a tenant started past its interactive share
execute at once, across every CPU worker of a deployment.

Priority orders a backlog only: once an overflow run holds a workflow task or an activity
slot it takes the CPU beside every interactive run, so a tenant that floods the gateway
still slows everyone's interactive runs by the work its runs do between theirs. The cap
is what the cache warmer's `max_parallel` is to the warmer: at most
`AGENTKEEL_OVERFLOW_RUNS_IN_FLIGHT` overflow runs past their start at once; the others
wait, durably, in their workflow (`workflows.overflow_gate`), in the order they came.

Three sorted sets in Redis per deployment (one hash tag, for a Redis Cluster): `held` (a
run's workflow id, scored by when its lease expires), `waiting` (by when the run first
asked: the queue's order) and `seen` (by when it last asked). A run that ends hands its
slot to the oldest waiter seen lately, in the same script, and its workflow signals that
waiter to look again (a signal only wakes it: what lets it go on is the slot it then finds
held in its name). A run that ends while it waits (cancelled) leaves the queue. A lease
that is not given back (a run terminated, or one that waits on a person past
`SLOT_LEASE_S`) expires on its own, and the waiters find the slot when they next look;
a waiter that stopped asking (terminated) is passed over.
"""

from __future__ import annotations

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
"""The longest a run holds its slot, not renewed: longer than an overflow run's work takes
(they are interactive requests), shorter than a run that waits on an approval should hold
the others back. A run that takes longer goes on without its slot, so runs longer than this
can exceed the cap; a slot handed to a waiter that does not take it up within it frees."""
WAITER_STALE_S = 120.0
"""A waiter not seen asking for this long is passed over when a slot frees (a run
terminated while it waited); a live one asks at least every
`workflows.overflow_gate.LONGEST_WAIT` (30 s), and one passed over all the same queues again
at the back when it next asks."""

_ASK = """
local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
local member, cap, lease, stale = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]),
  tonumber(ARGV[4])
local giving = ARGV[5] == '1'
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if giving then
  redis.call('ZREM', KEYS[1], member)
  redis.call('ZREM', KEYS[2], member)
  redis.call('ZREM', KEYS[3], member)
elseif redis.call('ZSCORE', KEYS[1], member) then
  redis.call('ZREM', KEYS[2], member)
  redis.call('ZREM', KEYS[3], member)
  return {1}
else
  redis.call('ZADD', KEYS[2], 'NX', now, member)
  redis.call('ZADD', KEYS[3], now, member)
end
local answer = {0}
while cap > 0 and redis.call('ZCARD', KEYS[1]) < cap do
  local head = redis.call('ZPOPMIN', KEYS[2])
  if #head == 0 then break end
  local seen = tonumber(redis.call('ZSCORE', KEYS[3], head[1]) or 0)
  redis.call('ZREM', KEYS[3], head[1])
  if seen >= now - stale then
    redis.call('ZADD', KEYS[1], now + lease, head[1])
    if head[1] == member then answer[1] = 1 else answer[#answer + 1] = head[1] end
  end
end
for i = 1, 3 do
  redis.call('PEXPIRE', KEYS[i], lease + stale)
end
return answer
"""
"""KEYS: held (scored by lease expiry), waiting (by first ask: the queue's order), seen (by
last ask); ARGV: the run, the cap (0: none), the lease and the waiters' staleness (ms), 1
to give the run's slot and its place back (else to ask for a slot). Times are the Redis
server's, so workers' clocks do not matter. A run that asks joins the queue (its first
place kept: `NX`); then each free slot goes to the oldest waiter seen lately. Returns {1
when the run holds a slot (taken now, or handed to it before), then the other waiters just
handed one, to be woken}."""


def overflow_keys(deployment: str) -> tuple[str, str, str]:
    """The `held`, `waiting` and `seen` sets of one deployment (its task queue)."""
    prefix = f"{quota_prefix(deployment)}overflow:"
    return f"{prefix}held", f"{prefix}waiting", f"{prefix}seen"


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
        lease, stale = int(SLOT_LEASE_S * 1000), int(WAITER_STALE_S * 1000)
        args: list[str | int] = [member, self._cap, lease, stale, int(giving)]
        mine, *woken = await self._ask(keys=self._keys, args=args)
        return bool(int(mine)), [w.decode() if isinstance(w, bytes) else str(w) for w in woken]
