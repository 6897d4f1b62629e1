"""The gateway's quotas: runs in flight, watching runs and open streams, per key and tenant.

Slots are leases in Redis (`leases.py`), so every replica counts the same. A stream's
lease is renewed by the stream while it is open. A run's lease is renewed while Temporal
says the run is running and dropped once it has ended, by whichever gateway looks: each
replica sweeps the run leases every third of a lease, and a start that finds its quota
full sweeps that quota before it refuses. The leases, not a gateway's memory, are the
record, so a restarted gateway (or another replica) keeps counting the runs started
before; a lease that no gateway renews (none is left running) expires with its TTL.
"""

from __future__ import annotations

import asyncio
import dataclasses
import math
import time
import uuid
from collections.abc import Sequence
from contextlib import suppress

import redis.asyncio as aioredis
import structlog
from temporalio.client import Client, WorkflowExecutionStatus
from temporalio.service import RPCError, RPCStatusCode

from agentkeel.activities.quota_leases import (
    Leases,
    Slot,
    limit_field,
    quota_limits_key,
    quota_prefix,
    scope_key,
)
from agentkeel.activities.redis_errors import REDIS_ERRORS
from agentkeel.client.agent_client import AgentClient
from agentkeel.gateway.quota_limits import Lease, QuotaLimits
from agentkeel.gateway.stream_slot import OpenStream
from agentkeel.schemas.gateway import QuotaKind, QuotaProblem, QuotaScope
from agentkeel.schemas.lanes import Lane, asks_watch
from agentkeel.schemas.request import AgentRequest
from agentkeel.schemas.search_attributes import AGENT_WAITING
from agentkeel.settings.model import Settings

RESERVED = "starting:"
"""A slot taken before its run exists: the sweep leaves it to its lease."""
RUN_KINDS = (QuotaKind.RUNS, QuotaKind.WATCHES)
HELD = {
    QuotaKind.RUNS: "runs in flight",
    QuotaKind.WATCHES: "watching runs in flight",
    QuotaKind.STREAMS: "open event streams",
}
PRE_SWEEP_GAP_S = 1.0
"""A watching start sweeps its caller's runs at most this often: a burst of watch starts
by one key costs one sweep (a describe per run it holds), not one each."""
log = structlog.get_logger(__name__)


def watches(request: AgentRequest) -> bool:
    """Whether the request asks for a watch (`schemas.lanes.asks_watch`). A watch asked for
    in words ("tell me when it ships") is known once its run starts watching: the worker
    takes its watch slot then, under the limits this gateway publishes, and the watch step
    fails with `WatchQuotaFull` where they are full (`activities.watch_slots`)."""
    return asks_watch(request)


class OverQuota(Exception):
    """A quota is full: answered `429` with `problem` and `Retry-After`."""

    def __init__(self, problem: QuotaProblem) -> None:
        super().__init__(problem.detail)
        self.problem = problem


class QuotasUnavailable(Exception):
    """Redis did not answer while a run's slot was taken: answered `503` with
    `Retry-After`, as the quota cannot be checked (nothing was started)."""

    retry_after_s = 1


class Quotas:
    def __init__(
        self, redis: aioredis.Redis, temporal: Client, limits: QuotaLimits, deployment: str
    ) -> None:
        """`deployment`: the task queue, so deployments sharing one Redis count apart."""
        self.leases = Leases(redis)
        self.temporal = temporal
        self.limits = limits
        self._pre_swept: dict[tuple[str, ...], float] = {}
        self._pre_sweeping: dict[tuple[str, ...], asyncio.Future[None]] = {}
        self.prefix = quota_prefix(deployment)
        self._limits_key = quota_limits_key(deployment)

    def _slots(self, kinds: Sequence[QuotaKind], caller: str, tenant: str) -> list[Slot]:
        return [
            slot
            for kind in kinds
            for slot in (
                Slot(
                    scope_key(self.prefix, kind, QuotaScope.KEY, caller), self.limits.per_key[kind]
                ),
                Slot(
                    scope_key(self.prefix, kind, QuotaScope.TENANT, tenant),
                    self.limits.per_tenant[kind],
                ),
            )
        ]

    async def reserve_run(self, caller: str, tenant: str, *, watching: bool) -> Lease:
        """A slot for a run about to start; `OverQuota` when its quotas stay full after
        the runs they hold that have ended are let go; `QuotasUnavailable` when Redis
        does not answer."""
        try:
            return await self._reserve_run(caller, tenant, watching=watching)
        except REDIS_ERRORS as exc:
            log.warning("gateway_quota_unavailable", tenant=tenant, error=repr(exc))
            raise QuotasUnavailable(f"the quotas' Redis did not answer: {exc}") from exc

    async def _reserve_run(self, caller: str, tenant: str, *, watching: bool) -> Lease:
        kinds = RUN_KINDS if watching else RUN_KINDS[:1]
        slots = self._slots(kinds, caller, tenant)
        member = RESERVED + uuid.uuid4().hex
        watch_limits = (
            self.limits.per_key[QuotaKind.WATCHES],
            self.limits.per_tenant[QuotaKind.WATCHES],
        )
        if watching and any(watch_limits):
            # Watches asked for in words among its runs count before it is let in.
            await self._pre_sweep([slot.key for slot in self._slots(RUN_KINDS[:1], caller, tenant)])
        full, held = await self.leases.take_counted(slots, member, self.limits.lease_s)
        if full is not None:
            await self.sweep([slot.key for slot in slots])
            full, held = await self.leases.take_counted(slots, member, self.limits.lease_s)
        if full is not None:
            raise OverQuota(self._problem(full))
        lane = Lane.AUTOMATION
        if not watching:
            try:  # the tenant's runs scope is the second slot (`_slots`)
                lane = await self._interactive_or_overflow(tenant, place=held[1])
            except REDIS_ERRORS as exc:  # a lane orders work; it never refuses a run
                log.warning("gateway_lane_uncounted", tenant=tenant, error=repr(exc))
                lane = Lane.INTERACTIVE
        return Lease(member, tuple(slot.key for slot in slots), lane)

    async def _interactive_or_overflow(self, tenant: str, place: int) -> Lane:
        """Interactive while the tenant holds at most its share of runs in flight, its
        watches aside (they may last days): `place` is the runs it held once this one was
        taken (in the same script), so of starts at once the earliest are interactive.
        Runs that ended count until a sweep lets them go (every third of a lease; a run
        waited on is let go when it ends): no sweep runs on a start's path."""
        share = self.limits.interactive_per_tenant
        if share == 0:
            return Lane.INTERACTIVE
        watching = scope_key(self.prefix, QuotaKind.WATCHES, QuotaScope.TENANT, tenant)
        watches = await self.leases.count(watching)
        return Lane.INTERACTIVE if place - watches <= share else Lane.OVERFLOW

    async def _pre_sweep(self, keys: list[str]) -> None:
        """Sweep `keys` ahead of a watching start, at most once a `PRE_SWEEP_GAP_S`: starts
        that come while a sweep of theirs runs wait for it, rather than pass it by."""
        scope = tuple(keys)
        running = self._pre_sweeping.get(scope)
        if running is None:
            if time.monotonic() - self._pre_swept.get(scope, -math.inf) < PRE_SWEEP_GAP_S:
                return  # swept just now: what it counted holds
            running = asyncio.ensure_future(self._sweep_and_note(scope))
            self._pre_sweeping[scope] = running
            running.add_done_callback(lambda _: self._pre_sweeping.pop(scope, None))
        await asyncio.shield(running)

    async def _sweep_and_note(self, scope: tuple[str, ...]) -> None:
        await self.sweep(list(scope))
        now = time.monotonic()  # noted once it succeeded: a failed sweep is tried again
        if len(self._pre_swept) > 10_000:  # bounded: forget what is no longer recent
            self._pre_swept = {
                k: t for k, t in self._pre_swept.items() if now - t < PRE_SWEEP_GAP_S
            }
        self._pre_swept[scope] = now

    async def started(self, lease: Lease, workflow_id: str) -> Lease:
        """The reservation becomes the run's own (one lease for requests sharing a run)."""
        try:
            await self.leases.rename(lease.keys, lease.member, workflow_id, self.limits.lease_s)
        except REDIS_ERRORS as exc:  # the run has started: its reservation expires instead
            log.warning("gateway_quota_unrenamed", workflow_id=workflow_id, error=repr(exc))
            return lease
        return dataclasses.replace(lease, member=workflow_id)

    async def release(self, lease: Lease) -> None:
        with suppress(*REDIS_ERRORS):  # the lease expires anyway
            await self.leases.release(lease.keys, lease.member)

    async def open_stream(self, caller: str, tenant: str) -> OpenStream:
        """A stream slot, renewed until `OpenStream.close`; `OverQuota` when it is full."""
        slots = self._slots([QuotaKind.STREAMS], caller, tenant)
        lease = Lease(uuid.uuid4().hex, tuple(slot.key for slot in slots))
        full = await self.leases.take(slots, lease.member, self.limits.lease_s)
        if full is not None:
            raise OverQuota(self._problem(full))
        stream = OpenStream(self, lease)
        stream.renewing = asyncio.create_task(stream.renew())
        return stream

    async def sweep(self, keys: Sequence[str] | None = None) -> None:
        """Renew the leases of runs still running and drop those of runs that have ended,
        in `keys` (every run quota of this deployment by default)."""
        if keys is None:
            keys = [
                key
                for kind in RUN_KINDS
                for key in await self.leases.scopes(f"{self.prefix}{kind}:*")
            ]
        running: dict[str, bool | None] = {}
        waiting: set[str] = set()
        runs_scope = f"{self.prefix}{QuotaKind.RUNS}:"
        for key in keys:
            for member in await self.leases.held(key):
                if member.startswith(RESERVED):
                    continue
                if member not in running:
                    running[member], waits = await self._state(member)
                    if waits:
                        waiting.add(member)
                if running[member] is True:
                    await self.leases.renew([key], member, self.limits.lease_s)
                    if member in waiting and key.startswith(runs_scope):
                        # A watch asked for in words holds its watch slot from when it
                        # started watching (`watch_slots`); held by a run from before
                        # that, it counts from now on.
                        watch_key = f"{self.prefix}{QuotaKind.WATCHES}:{key[len(runs_scope) :]}"
                        await self.leases.take([Slot(watch_key, 0)], member, self.limits.lease_s)
                elif running[member] is False:
                    await self.leases.release([key], member)

    async def publish_limits(self) -> None:
        """Write this gateway's watch limits where the CPU workers read them: a run that
        starts watching without having asked for it up front (a watch asked for in words)
        takes its watch slot there, and is refused by the same limits."""
        fields: dict[str, float] = {
            limit_field(QuotaKind.WATCHES, QuotaScope.KEY): self.limits.per_key[QuotaKind.WATCHES],
            limit_field(QuotaKind.WATCHES, QuotaScope.TENANT): self.limits.per_tenant[
                QuotaKind.WATCHES
            ],
            "lease_s": self.limits.lease_s,
        }
        async with self.leases.redis.pipeline(transaction=True) as pipe:
            pipe.hset(self._limits_key, mapping=fields)  # type: ignore[arg-type]
            # Gone with the last gateway: no limits are enforced that no sweep upholds.
            pipe.expire(self._limits_key, math.ceil(3 * self.limits.lease_s))
            await pipe.execute()

    async def sweeping(self, *, publish: bool = True) -> None:
        """`sweep` every third of a lease, for as long as the gateway runs (and, `publish`,
        publish the limits each time: a Redis that restarted has them again). `agentkeel
        mcp` sweeps without publishing: the gateway's limits are the workers'."""
        while True:
            try:
                if publish:
                    await self.publish_limits()
                await self.sweep()
            except (*REDIS_ERRORS, RPCError) as exc:
                log.warning("gateway_quota_sweep_failed", error=repr(exc))
            await asyncio.sleep(self.limits.sweep_every_s)

    async def _state(self, workflow_id: str) -> tuple[bool | None, bool]:
        """Whether the run is running (None when Temporal cannot say: its lease is left to
        expire unless a later sweep can tell), and whether it waits on a watch or a timer
        (`AgentWaiting`)."""
        try:
            described = await self.temporal.get_workflow_handle(workflow_id).describe()
        except RPCError as exc:
            return (False if exc.status == RPCStatusCode.NOT_FOUND else None), False
        running = described.status == WorkflowExecutionStatus.RUNNING
        return running, running and described.typed_search_attributes.get(AGENT_WAITING) is True

    def _problem(self, full: Slot) -> QuotaProblem:
        kind, scope = full.key[len(self.prefix) :].split(":")[:2]
        quota, where = QuotaKind(kind), QuotaScope(scope)
        owner = "this API key" if where is QuotaScope.KEY else "this tenant"
        return QuotaProblem(
            detail=f"{owner} has {full.limit} {HELD[quota]}, its most; try again later",
            quota=quota,
            scope=where,
            limit=full.limit,
            retry_after_s=max(1, math.ceil(self.limits.sweep_every_s)),
        )


def deployment_quotas(client: AgentClient, settings: Settings) -> Quotas | None:
    """The quotas of `settings` (`AGENTKEEL_GATEWAY_*`) in `client`'s Redis, for every door
    that starts runs (the HTTP routes, `/mcp`, `agentkeel mcp` over stdio); None without
    Redis (said once: nothing is enforced then)."""
    if client.redis is None:
        log.warning("gateway_without_quotas", note="no Redis: quotas are not enforced")
        return None
    limits = QuotaLimits.from_settings(settings)
    return Quotas(client.redis, client.temporal, limits, settings.task_queue)
