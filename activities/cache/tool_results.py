"""Tool results cached with each tool's TTL, served stale while a refresh runs.

Tools declare `cache_ttl` in the catalog: reference data (policy articles) for an
hour, real-time data (inventory) for seconds, live tracking not at all. A
side-effecting tool invalidates what was cached about the entities it changed.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import json
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import structlog
from pydantic import BaseModel
from temporalio import activity

from agentkeel.activities.cache.backend import (
    CLOCK_SKEW_MARGIN_S,
    CacheBackend,
    CacheUnavailable,
)
from agentkeel.activities.cache.entities import entities_in
from agentkeel.activities.span_notes import note
from agentkeel.schemas.actor import SYSTEM_ACTOR
from agentkeel.schemas.path_cache import tenant_tag
from agentkeel.schemas.tools import ActorScoped, ToolSpec, catalog_version

log = structlog.get_logger(__name__)

M = TypeVar("M", bound=BaseModel)
KEY_PREFIX = "agentkeel:tool:v4"
"""v4: keys carry their tenant's slot tag (`schemas.path_cache.tenant_tag`); v3 keys are never
read again."""
DEFAULT_TENANT = "default"
STORE_DRAIN_S = 1.0
"""How long a closing worker waits for the entries still being written."""
STORED_WAIT_S = 0.5
"""How long a read waits for this process's write of its key: one Redis reply at most (the
workers' socket timeout), so a stalled Redis never adds more to a tool call."""


def tool_key(spec: ToolSpec, args: BaseModel) -> str:
    """Per tool, arguments, tenant and audience: a result is only served to actors of the
    same tenant who could have read it themselves (a customer's cached reads are its own).

    Also the key of a read shared while in flight (`activities.downstream.sharing`), so
    neither ever hands one tenant's rows to another."""
    scoped = args if isinstance(args, ActorScoped) else None
    audience = ((scoped and scoped.actor) or SYSTEM_ACTOR).audience
    tenant = tenant_of(args)
    canonical = json.dumps(
        args.model_dump(mode="json", exclude={"actor", "tenant", "fresh", "call_id", "stale_ok"}),
        sort_keys=True,
    )
    digest = hashlib.sha256(canonical.encode()).hexdigest()[:32]
    tag = tenant_tag(tenant)
    return f"{KEY_PREFIX}:{tag}:{catalog_version()}:{spec.name}:{tenant}:{audience}:{digest}"


def tenant_of(args: BaseModel) -> str:
    """The tenant a tool call's cache entries belong to."""
    return args.tenant if isinstance(args, ActorScoped) else DEFAULT_TENANT


class ToolResultCache:
    """Read-through cache of idempotent tool results, with stale-while-revalidate."""

    def __init__(
        self,
        backend: CacheBackend,
        *,
        stale_while_revalidate: bool = True,
        stale_for_deadlines_only: bool = False,
    ) -> None:
        """`stale_for_deadlines_only`: a stale result serves only calls that ask for one
        (`ActorScoped.stale_ok`, a deadline's trade); the others read the source."""
        self._backend = backend
        self._swr = stale_while_revalidate
        self._deadlines_only = stale_for_deadlines_only
        self._refreshing: dict[str, asyncio.Task[None]] = {}
        self._storing: dict[str, asyncio.Task[None]] = {}  # the latest write of each key
        self._writes: set[asyncio.Task[None]] = set()  # every write under way (held, too)

    async def close(self) -> None:
        """Finish the entries still being written (briefly; what is left is cancelled),
        cancel refreshes still running (worker shutdown)."""
        if self._writes:
            await asyncio.wait(list(self._writes), timeout=STORE_DRAIN_S)
        tasks = [*self._writes, *self._refreshing.values()]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    async def get_or_compute(
        self, spec: ToolSpec, args: BaseModel, compute: Callable[[Any], Awaitable[M]]
    ) -> M:
        if spec.cache_ttl is None or not spec.idempotent:
            return await compute(args)
        key = tool_key(spec, args)
        if isinstance(args, ActorScoped) and args.fresh:
            return await self._compute_and_store(key, spec, args, compute)
        await self._stored(key)
        try:
            raw = await self._backend.get(key)
        except CacheUnavailable:
            return await compute(args)
        if raw is not None:
            entry = json.loads(raw)
            value: M = spec.result_model.model_validate(entry["value"])  # type: ignore[assignment]
            if time.time() < entry["fresh_until"]:
                note(cache_hit=True)
                return value
            if self._swr and self._may_serve_stale(args):
                self._refresh_in_background(key, spec, args, compute)
                note(cache_hit=True, cache_stale=True)
                return value
        note(cache_hit=False)
        return await self._compute_and_store(key, spec, args, compute)

    def _may_serve_stale(self, args: BaseModel) -> bool:
        if not self._deadlines_only:
            return True
        return isinstance(args, ActorScoped) and args.stale_ok

    async def _compute_and_store(
        self, key: str, spec: ToolSpec, args: BaseModel, compute: Callable[[Any], Awaitable[M]]
    ) -> M:
        read_since = time.time()
        value = await compute(args)
        self._store_behind(key, spec, args, value, read_since)
        return value

    def _store_behind(
        self, key: str, spec: ToolSpec, args: BaseModel, value: BaseModel, read_since: float
    ) -> None:
        """Write the entry after the call has returned: the caller has the value, and the
        write (a script round trip) is no part of its answer. A read of the same key in
        this process waits for it first (`_stored`), so it finds the entry as before; an
        invalidation meanwhile still wins, as the script checks `read_since` (less the
        clock-skew margin: the invalidation's stamp is another host's clock)."""

        async def store() -> None:
            try:
                await self._store(key, spec, args, value, read_since)
            except Exception as exc:  # an entry not written costs one read of the source
                log.warning("tool_cache_store_failed", tool=spec.name, error=repr(exc))

        task = asyncio.get_running_loop().create_task(store())
        self._storing[key] = task
        self._writes.add(task)

        def settled(done: asyncio.Task[None]) -> None:
            self._writes.discard(done)
            if self._storing.get(key) is done:
                del self._storing[key]

        task.add_done_callback(settled)

    async def _stored(self, key: str) -> None:
        """Wait for this process's write of `key`, if one is under way (never cancels it),
        at most as long as one Redis reply may take."""
        pending = self._storing.get(key)
        if pending is not None:
            await asyncio.wait({pending}, timeout=STORED_WAIT_S)

    async def _store(
        self, key: str, spec: ToolSpec, args: BaseModel, value: BaseModel, read_since: float
    ) -> None:
        assert spec.cache_ttl is not None
        ttl = spec.cache_ttl
        entry = {
            "fresh_until": time.time() + ttl.total_seconds(),
            "value": value.model_dump(mode="json"),
        }
        # Kept for a second TTL past freshness: the window in which a stale value may be served.
        keep = ttl * 2 if self._swr else ttl
        entities = entities_in(args.model_dump(mode="json"), entry["value"])
        try:
            await self._backend.put(
                key, json.dumps(entry), keep, entities,
                tenant=tenant_of(args), read_since=read_since - CLOCK_SKEW_MARGIN_S,
            )  # fmt: skip
        except CacheUnavailable:
            pass

    def _refresh_in_background(
        self, key: str, spec: ToolSpec, args: BaseModel, compute: Callable[[Any], Awaitable[M]]
    ) -> None:
        if key in self._refreshing:
            return  # one refresh per key at a time

        async def refresh() -> None:
            try:
                started = time.time()
                # Outside any activity, so bounded here by the tool's own timeout.
                async with asyncio.timeout(spec.timeout.total_seconds()):
                    await self._store(key, spec, args, await compute(args), started)
            except Exception as exc:  # the stale value was served; the next call retries
                log.warning("tool_cache_refresh_failed", tool=spec.name, error=str(exc))
            finally:
                self._refreshing.pop(key, None)

        self._refreshing[key] = asyncio.get_running_loop().create_task(refresh())


def cached_tool(
    method: Callable[[Any], Awaitable[M]], spec: ToolSpec, cache: ToolResultCache
) -> Any:
    """The tool activity `method`, reading through `cache`; same activity name and types."""

    @functools.wraps(method, updated=())  # not __dict__: it holds the activity definition
    async def run(args: Any) -> M:
        return await cache.get_or_compute(spec, args, method)

    return activity.defn(name=spec.name)(run)


def invalidating_tool(
    method: Callable[[Any], Awaitable[M]], spec: ToolSpec, backend: CacheBackend
) -> Any:
    """The side-effecting tool activity `method`; after a change, what was cached about the
    changed entities (tool results and whole paths alike) is deleted."""

    @functools.wraps(method, updated=())  # not __dict__: it holds the activity definition
    async def run(args: Any) -> M:
        result = await method(args)
        if getattr(args, "authorize_only", False):
            return result  # only checked, nothing changed
        # Also when the effect was already there (a retry after a crash between the effect
        # and this line): invalidating twice is harmless, not invalidating is not.
        changed = entities_in(args.model_dump(mode="json"), result.model_dump(mode="json"))
        tenant = tenant_of(args)
        try:
            deleted = await backend.invalidate(changed, tenant=tenant)
            if tenant != DEFAULT_TENANT:  # results of tools that take no tenant are shared
                deleted += await backend.invalidate(changed, tenant=DEFAULT_TENANT)
        except CacheUnavailable as exc:
            # The effect stands and must be reported as done; what was cached about it
            # ages out with its TTL. Loud, because until then it may be served.
            log.error("cache_invalidation_failed", tool=spec.name, error=str(exc))
        else:
            log.info(
                "cache_invalidated", tool=spec.name, entities=sorted(changed), keys=len(deleted)
            )
        return result

    return activity.defn(name=spec.name)(run)
