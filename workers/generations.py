"""A CPU worker that serves a changed MCP tool list without stopping.

Each catalog is served by a generation: its MCP connections, pools, activities and
Temporal worker, built and run in a context of its own (`schemas.tools.catalog.
open_generation`), so its workflow activations and activities read its catalog. When a
server's list changes, the next generation is built beside the serving one and starts
polling; only then does the one before drain (it stops polling, its activities in flight
finish, its cached runs are evicted). Every other tool is served throughout, and the
worker process, its health endpoint and its metrics stay up.

What a run sees is what a restart gave it: a run the old generation held is replayed by
the new one, against the new catalog, at its next workflow task (`docs/mcp.md`). Two
generations poll the same task queue for a moment, as two workers of a rolling deploy do.

Only where activations run on the worker's event loop (`AGENTKEEL_WORKFLOW_ACTIVATIONS=
inline`, the default, without the sandbox): the SDK hands thread-run activations to a pool
that does not carry a context, so the sandbox and `thread` keep the restart
(`restart_for_new_catalog`).

The inference worker replays nothing: its activities read the newest catalog as they
start (its prompts and plan schema describe the tools), so it follows a changed list in
place, its models loaded once (`follow_catalog`).
"""

from __future__ import annotations

import asyncio
import contextvars
import os
import signal
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager

import structlog

from agentkeel.schemas.tools.catalog import open_generation
from agentkeel.workers.readiness import Readiness

log = structlog.get_logger(__name__)

Serve = Callable[[Callable[[str], None]], AbstractAsyncContextManager[object]]
"""Builds one generation and serves it while entered (its Temporal worker polling); its
argument is called with an MCP server's name when that server's tool list changed."""


class Generation:
    """One catalog's worker, served in a context of its own until `close`."""

    def __init__(self, serve: Serve) -> None:
        self._serve = serve
        self.changed = asyncio.Event()
        self.changed_by = ""
        self._ready: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._closing = asyncio.Event()
        self.task: asyncio.Task[None] | None = None

    @classmethod
    async def start(cls, serve: Serve) -> Generation:
        """Build a generation and return once it serves; its build's error raises here."""
        generation = cls(serve)
        context = contextvars.copy_context()
        context.run(open_generation)
        task = asyncio.create_task(generation._run(), context=context)
        generation.task = task
        await asyncio.wait({generation._ready, task}, return_when=asyncio.FIRST_COMPLETED)
        if not generation._ready.done():
            task.result()  # the build's error
            raise RuntimeError("a worker generation ended before it served")
        return generation

    def _changed(self, server: str) -> None:
        if not self.changed.is_set():
            self.changed_by = server
            self.changed.set()

    async def _run(self) -> None:
        async with self._serve(self._changed):
            self._ready.set_result(None)
            await self._closing.wait()

    async def close(self) -> None:
        """Drain: polling stops, activities in flight finish (the worker's graceful
        timeout), then the generation's connections and pools close."""
        self._closing.set()
        if self.task is not None:
            await self.task


async def serve_generations(serve: Serve, readiness: Readiness, stop: asyncio.Event) -> None:
    """Serve a generation until `stop`; each changed tool list starts the next beside it.

    A generation that stops serving by itself raises here (the process exits and its
    supervisor starts it again). A next generation that cannot be built (its server gone
    again, its list unusable) leaves the serving one in place, said in the log; the next
    change tries again."""
    succession = _Succession(await Generation.start(serve))
    readiness.ready = True
    try:
        await succession.follow(serve, stop)
    finally:
        readiness.ready = False
        await succession.current.close()


@asynccontextmanager
async def follow_catalog(serve: Serve) -> AsyncIterator[None]:
    """Within the block, the process's newest catalog follows each changed tool list: a
    next generation of `serve` (the catalog and its MCP connections) is installed, then
    the one before closed. For code that reads the catalog afresh and replays nothing
    (the inference worker's activities)."""
    succession = _Succession(await Generation.start(serve))
    stop = asyncio.Event()
    following = asyncio.create_task(succession.follow(serve, stop))
    try:
        yield
    finally:
        stop.set()
        try:
            await following
        except Exception as exc:  # the block's own outcome stands; this one is logged
            log.error("catalog_not_followed", error=str(exc) or type(exc).__name__)
        await succession.current.close()


class _Succession:
    """The serving generation, and the changes it follows."""

    def __init__(self, current: Generation) -> None:
        self.current = current

    async def follow(self, serve: Serve, stop: asyncio.Event) -> None:
        while not stop.is_set():
            current = self.current
            await _until_any(current, stop, current.changed)
            if current.task is not None and current.task.done():
                current.task.result()
                raise RuntimeError("the worker stopped serving by itself")
            if stop.is_set():
                return
            log.warning("worker_serving_new_catalog", mcp_server=current.changed_by)
            try:
                successor = await Generation.start(serve)
            except Exception as exc:  # whatever failed, the serving generation still serves
                log.error("worker_new_catalog_failed", error=str(exc) or type(exc).__name__)
                current.changed.clear()
                continue
            self.current = successor  # serving now, whatever the one before's drain does
            try:
                await current.close()
            except Exception as exc:  # its drain failed; the successor serves on
                log.error("worker_generation_not_drained", error=str(exc) or type(exc).__name__)
            log.info("worker_serving_catalog", generation="new")


async def _until_any(generation: Generation, *events: asyncio.Event) -> None:
    waits = {asyncio.ensure_future(event.wait()) for event in events}
    ended = {generation.task} if generation.task is not None else set()
    await asyncio.wait({*waits, *ended}, return_when=asyncio.FIRST_COMPLETED)
    for wait in waits:
        wait.cancel()


def stop_on_signals() -> asyncio.Event:
    """Set on SIGTERM or SIGINT: the worker then drains (polling stops, activities in
    flight get the worker's graceful timeout to finish)."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    return stop


def restart_for_new_catalog(server: str) -> None:
    """An MCP server's tools changed, in a worker whose activations run on threads: stop as
    on SIGTERM (activities in flight finish), so the supervisor starts this worker again
    with the new catalog and its new version."""
    log.warning("worker_restarting_for_new_catalog", mcp_server=server)
    os.kill(os.getpid(), signal.SIGTERM)
