"""A tool activity behind its downstream's protections: shared reads, merged calls, caps.

Outermost, a read already in flight is awaited (`shared_tool`, around the tool-result
cache); inside the cache (a hit reaches nothing), a batching tool's call joins the next
merged request, and whatever goes out holds one of the downstream's slots (`guarded_tool`:
one slot per request, however many calls it carries).
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, TypeVar

import structlog
from pydantic import BaseModel
from temporalio import activity
from temporalio.service import RPCError

from agentkeel.activities.cache.tool_results import tool_key
from agentkeel.activities.downstream.batching import Batcher
from agentkeel.activities.downstream.limiter import DownstreamLimiter, OnWait
from agentkeel.activities.downstream.sharing import SharedReads
from agentkeel.activities.span_notes import note_tool_call
from agentkeel.schemas.names import AGENT_WORKFLOW, SLOT_WAIT_SIGNAL
from agentkeel.schemas.tools import ToolSpec
from agentkeel.schemas.tools.downstreams import SlotWait

log = structlog.get_logger(__name__)

M = TypeVar("M", bound=BaseModel)
LEASE_MARGIN = timedelta(seconds=5)
"""A lease outlives its call's timeout by this much: a crashed worker's expire soon after."""


@dataclass
class Downstreams:
    """This worker's protections, shared by every tool activity."""

    limiter: DownstreamLimiter
    shared: SharedReads | None
    merge_window_s: float


def slot_wait_reporter(downstream: str, args: Any) -> OnWait | None:
    """Tells the calling run that this call waits for a slot (then that it got one), so its
    `progress` shows the step waiting, not running, and its queue time. Best effort."""
    call_id = getattr(args, "call_id", None)
    if not activity.in_activity() or call_id is None:
        return None
    info = activity.info()
    if info.workflow_type != AGENT_WORKFLOW or info.workflow_id is None:
        return None  # a fan-out part: its parent shows the step
    handle = activity.client().get_workflow_handle(info.workflow_id, run_id=info.workflow_run_id)

    async def report(waiting: bool, seconds: float) -> None:
        note = SlotWait(
            call_id=call_id, downstream=downstream, waiting=waiting, waited_ms=seconds * 1000
        )
        try:
            await handle.signal(SLOT_WAIT_SIGNAL, note)
        except RPCError as exc:  # the run ended meanwhile: nobody to tell
            log.info("slot_wait_not_signalled", call_id=call_id, error=str(exc))

    return report


def guarded_tool(
    method: Callable[[Any], Awaitable[M]],
    spec: ToolSpec,
    downstreams: Downstreams,
    many: Callable[[Sequence[Any]], Awaitable[Sequence[Any]]] | None = None,
) -> Any:
    """The tool activity `method` behind its downstream's protections; same name and types."""
    if spec.downstream is None:
        return method
    name = spec.downstream.name
    lease_s = (spec.timeout + LEASE_MARGIN).total_seconds()
    limiter = downstreams.limiter

    async def one(call: tuple[Any, OnWait | None]) -> M:
        args, report = call
        async with limiter.slot(name, lease_s=lease_s, on_wait=report, tenant=_tenant_of(args)):
            return await method(args)

    send: Callable[[tuple[Any, OnWait | None]], Awaitable[M]] = one
    if spec.batch and many is not None and downstreams.merge_window_s > 0:

        async def many_in_one_slot(calls: Sequence[tuple[Any, OnWait | None]]) -> Sequence[Any]:
            reports = [report for _, report in calls if report is not None]

            async def report_all(waiting: bool, seconds: float) -> None:
                await asyncio.gather(*(report(waiting, seconds) for report in reports))

            # (A merged request counts against its first caller's tenant's share.)
            tenant = _tenant_of(calls[0][0])
            async with limiter.slot(name, lease_s=lease_s, on_wait=report_all, tenant=tenant):
                return await many([args for args, _ in calls])

        batcher: Batcher[tuple[Any, OnWait | None], M] = Batcher(
            many_in_one_slot, window_s=downstreams.merge_window_s
        )
        send = batcher.call

    @functools.wraps(method, updated=())  # not __dict__: it holds the activity definition
    async def run(args: Any) -> M:
        return await send((args, slot_wait_reporter(name, args)))

    return activity.defn(name=spec.name)(run)


def shared_tool(
    method: Callable[[Any], Awaitable[M]], spec: ToolSpec, shared: SharedReads | None
) -> Any:
    """The tool activity `method` (the cached one: outermost, so only the read that flies
    stores its result, with its own start time) sharing identical reads in flight; every
    tool's call notes its tool, step and attempt on its span here.

    Never a side effect, and never a watch's read (`fresh`): it exists to see a change,
    so it must not join a read that began before the change.
    """
    if shared is None or not spec.idempotent:

        @functools.wraps(method, updated=())  # not __dict__: it holds the activity definition
        async def alone(args: Any) -> M:
            note_tool_call(spec.name, args)
            return await method(args)

        return activity.defn(name=spec.name)(alone)

    @functools.wraps(method, updated=())
    async def run(args: Any) -> M:
        note_tool_call(spec.name, args)
        if getattr(args, "fresh", False):
            return await method(args)
        return await shared.read(tool_key(spec, args), lambda: method(args))

    return activity.defn(name=spec.name)(run)


def _tenant_of(args: Any) -> str:
    """The tenant a tool call is made for (`ActorScoped.tenant`), as its slot counts it."""
    tenant = getattr(args, "tenant", None)
    return tenant if isinstance(tenant, str) else "default"
