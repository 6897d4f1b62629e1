"""A tool activity behind its downstream's protections: shared reads, merged calls, caps.

In that order, inside the tool-result cache (a cache hit reaches nothing): a read already
in flight is awaited; a batching tool's call joins the next merged request; whatever goes
out holds one of the downstream's slots (one per request, however many calls it carries).
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, TypeVar

from pydantic import BaseModel
from temporalio import activity

from activities.cache.tool_results import tool_key
from activities.downstream.batching import Batcher
from activities.downstream.limiter import DownstreamLimiter
from activities.downstream.sharing import SharedReads
from schemas.tools import ToolSpec

M = TypeVar("M", bound=BaseModel)
LEASE_MARGIN = timedelta(seconds=5)
"""A lease outlives its call's timeout by this much: a crashed worker's expire soon after."""


@dataclass
class Downstreams:
    """This worker's protections, shared by every tool activity."""

    limiter: DownstreamLimiter
    shared: SharedReads | None
    merge_window_s: float


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

    async def one(args: Any) -> M:
        async with limiter.slot(name, lease_s=lease_s):
            return await method(args)

    send: Callable[[Any], Awaitable[M]] = one
    if spec.batch and many is not None and downstreams.merge_window_s > 0:

        async def many_in_one_slot(calls: Sequence[Any]) -> Sequence[Any]:
            async with limiter.slot(name, lease_s=lease_s):
                return await many(calls)

        batcher: Batcher[Any, M] = Batcher(many_in_one_slot, window_s=downstreams.merge_window_s)
        send = batcher.call

    shared = downstreams.shared if spec.idempotent else None  # effects are never shared

    @functools.wraps(method, updated=())  # not __dict__: it holds the activity definition
    async def run(args: Any) -> M:
        if shared is None:
            return await send(args)
        return await shared.read(tool_key(spec, args), lambda: send(args))

    return activity.defn(name=spec.name)(run)
