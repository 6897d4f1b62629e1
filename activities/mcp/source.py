"""A worker's MCP servers: connected at start, their tools listed as catalog entries.

A catalog is fixed for a worker generation's life (runs in flight must see the tools they
were planned with), so the tools are listed once, when the generation starts, and the
catalog version derives from what was listed: a server whose tool list changes changes the
version, and no cached path outlives the tools it was planned with. A server unavailable
at start is served as any worker last listed it (`listings`: every worker holds one
catalog). A running worker told of a change (`notifications/tools/list_changed`) lists
again and, when the list differs, calls `on_change`: the CPU worker then serves the new
catalog in a next generation, built beside the serving one, which drains after it
(`workers.generations`); the inference worker reads it in place.

Why a generation and not the catalog swapped under the running worker: workflow code reads
the catalog while it runs and while it replays (plan checks, effect admission, activity
options), so a swap under the workflows a worker holds would change a run's decisions
between two of its tasks. A Temporal worker's activity set is fixed when it is made
besides, as are the caches' versions and the downstream caps: a generation makes all of
them anew at once, its runs replayed against its own catalog, as a restart did
(`docs/mcp.md`, "A changed tool list").
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Collection, Coroutine, Mapping, Sequence
from typing import Any

import mcp.types as types
import structlog

from agentkeel.activities.mcp.connection import McpConnection, McpUnreachable
from agentkeel.activities.mcp.listings import FLAP_WINDOW_S, ServerListings
from agentkeel.activities.mcp.specs import mcp_downstream, served_specs, without_collisions
from agentkeel.schemas.tools.downstreams import Downstream
from agentkeel.schemas.tools.spec import ToolSpec
from agentkeel.sdk.mcp import McpServer, mcp_tool_name

__all__ = ["McpToolSource", "McpUnreachable"]

log = structlog.get_logger(__name__)

RETRY_FIRST_S = 5.0
"""The first wait before a server unavailable at start is asked again."""
RETRY_MAX_S = 120.0
"""The longest wait between two asks of a server still unavailable."""
FLAP_LIMIT = 3
"""Changes of one server's list within `FLAP_WINDOW_S` (counted across the workers and
their restarts) past which the worker stops restarting for it and refuses its tools
(`McpToolsChanging`) until it keeps one list for a window."""


class McpToolSource:
    """The connections to `servers` and the tools they listed.

    Args:
        servers: The domain's and the deployment's MCP servers.
        environ: Where bearer tokens are read (default: the environment).
        on_change: Called with the server's name when a server's tool list changed, or
            when a server that was unavailable at start answers again.
        retry_s: The first wait before an unavailable server is asked again; each wait
            doubles, up to `RETRY_MAX_S`.
        listings: Where each server's last good list is kept for every worker
            (`listings`): a server unavailable at start is served as last listed.
        settle_s: How long an unsettled server must keep one list (`FLAP_LIMIT`).
    """

    def __init__(
        self,
        servers: Sequence[McpServer],
        *,
        environ: Mapping[str, str] | None = None,
        on_change: Callable[[str], None] | None = None,
        retry_s: float = RETRY_FIRST_S,
        listings: ServerListings | None = None,
        settle_s: float = FLAP_WINDOW_S,
    ) -> None:
        names = [s.name for s in servers]
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise ValueError(f"MCP servers named twice: {', '.join(twice)}")
        self._on_change = on_change
        self._retry_s = retry_s
        self._listings = listings
        self._settle_s = settle_s
        self.connections = [
            McpConnection(s, environ=environ, on_tools_changed=self._changed) for s in servers
        ]
        self._listed: dict[str, list[str]] = {}
        self._checks: set[asyncio.Task[None]] = set()
        self._checking: dict[str, asyncio.Lock] = {}
        self._changed_at: dict[str, float] = {}
        """When an unsettled server last said its list changed (loop time)."""
        self.withdrawn: dict[str, str] = {}
        """Catalog name (or `server_*` for all of a server's) -> why it is not served: a
        server that could not be reached or listed at start, a tool that cannot be served
        as listed. Plans naming them are refused with the reason; the rest is served."""
        self.intents: dict[str, list[str]] = {}
        """Intent -> the catalog names of the listed tools the configuration puts in it
        (`McpServer.intents`, `McpToolPolicy.intents`); filled by `start`."""

    async def start(self, taken: Collection[str] = ()) -> tuple[list[ToolSpec], list[Downstream]]:
        """Connect to every server and list its tools, all at once.

        A server that cannot be started, reached or listed in time, and a tool that cannot
        be served as listed, is left out (logged, and in `withdrawn`): one misbehaving
        server degrades its own tools only, never the worker or the other tools. So is a
        tool whose catalog name another server's tool has too (both), or one of `taken`
        (the domain's own tools and the built-ins: theirs stands; logged only)."""
        listed = await asyncio.gather(
            *(c.list_tools() for c in self.connections), return_exceptions=True
        )
        specs: list[ToolSpec] = []
        downstreams: list[Downstream] = []
        for connection, answer in zip(self.connections, listed, strict=True):
            server = connection.server
            tools = await self._listing(connection, answer)
            if tools is None:
                continue
            downstream = mcp_downstream(server)
            served, refused = served_specs(connection, tools, downstream)
            for name, reason in refused.items():
                log.warning("mcp_tool_refused", server=server.name, tool=name, error=reason)
            self.withdrawn.update(refused)
            self._listed[server.name] = sorted(_fingerprint(t) for t in tools)
            specs.extend(served)
            downstreams.append(downstream)
            served_names = {s.name for s in served}
            for tool in tools:
                name = mcp_tool_name(server, tool.name)
                if name in served_names:
                    for intent in server.intents_of(tool.name):
                        self.intents.setdefault(intent, []).append(name)
            log.info(
                "mcp_tools_listed",
                server=server.name,
                transport=server.transport,
                tools=[s.name for s in served],
            )
        return without_collisions(specs, set(taken), self.withdrawn, self.intents), downstreams

    async def _listing(
        self, connection: McpConnection, answer: list[types.Tool] | BaseException
    ) -> list[types.Tool] | None:
        """The tools to serve of one server: as it listed them now (kept for the other
        workers), else as any worker last saw them (its calls fail as its outage until
        it answers), else none (withdrawn, with the reason)."""
        server = connection.server
        if not isinstance(answer, BaseException):
            if self._listings is not None:
                await self._listings.remember(server, answer)
            return answer
        if not isinstance(answer, Exception):
            raise answer
        last = await self._listings.recall(server) if self._listings is not None else None
        if last is None:
            self.withdrawn[f"{server.tool_prefix}*"] = str(answer)
            self._listed[server.name] = ["unavailable"]
            log.warning("mcp_server_unavailable", server=server.name, error=str(answer))
        else:
            log.warning(
                "mcp_server_unavailable_served_as_last_listed",
                server=server.name,
                error=str(answer),
            )
            self._listed[server.name] = sorted(_fingerprint(t) for t in last)
        # Asked again once what it is served by is set: its return is judged against that.
        self._spawn(self._await_return(connection))
        return last

    def _changed(self, connection: McpConnection) -> None:
        self._spawn(self._check(connection))

    def _spawn(self, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.get_running_loop().create_task(work)
        self._checks.add(task)
        task.add_done_callback(self._checks.discard)

    async def _await_return(self, connection: McpConnection) -> None:
        """Ask a server that was unavailable at start again, backing off, until it lists.

        Its tools are withdrawn only until then: when it answers, the worker is told as of
        a changed list (`on_change`) and restarts serving them. Bounding how long workers
        started during an outage differ from those started after it keeps their catalogs
        apart for as short a time as the server allows (docs/mcp.md)."""
        wait = self._retry_s
        while True:
            await asyncio.sleep(wait)
            try:
                tools = await connection.list_tools()
            except Exception as exc:  # whatever it is, the server is still not serving
                wait = min(wait * 2, RETRY_MAX_S)
                log.info(
                    "mcp_server_still_unavailable",
                    server=connection.server.name,
                    error=str(exc),
                    retry_in_s=wait,
                )
                continue
            name = connection.server.name
            if self._listings is not None:
                await self._listings.remember(connection.server, tools)
            if sorted(_fingerprint(t) for t in tools) == self._listed.get(name):
                # Served as last listed, and listing so again: nothing to restart for.
                log.warning("mcp_server_back", server=name, restart=False)
                return
            log.warning("mcp_server_back", server=name, restart=True)
            if self._on_change is not None:
                self._on_change(name)
            return

    async def _check(self, connection: McpConnection) -> None:
        name = connection.server.name
        lock = self._checking.setdefault(name, asyncio.Lock())
        async with lock:  # notifications come in bursts: one check at a time per server
            if connection.unsettled is not None:
                self._changed_at[name] = asyncio.get_running_loop().time()
                return  # `_settle` waits for a window without changes
            try:
                tools = await connection.list_tools()
            except McpUnreachable as exc:
                log.warning("mcp_relist_failed", server=name, error=str(exc))
                return
            now = sorted(_fingerprint(t) for t in tools)
            if now == self._listed.get(name):
                return
            log.warning("mcp_catalog_changed", server=name, tools=[t.name for t in tools])
            listings = self._listings
            changes = (
                await listings.count_change(connection.server, "\n".join(now)) if listings else 1
            )
            if changes > FLAP_LIMIT:
                self._unsettle(connection, changes)
                return
            self._listed[name] = now
        if self._on_change is not None:
            self._on_change(name)

    def _unsettle(self, connection: McpConnection, changes: int) -> None:
        """Restarting on every change would take the worker and every other tool down
        with it, again and again: this server's tools are refused instead, until it keeps
        one list for a window, and the worker restarts onto that one."""
        name = connection.server.name
        connection.unsettled = (
            f"MCP server {name} changed its tool list {changes} times in "
            f"{FLAP_WINDOW_S // 60} minutes: its tools are refused until it keeps one"
        )
        log.warning("mcp_server_unsettled", server=name, changes=changes)
        self._changed_at[name] = asyncio.get_running_loop().time()
        self._spawn(self._settle(connection))

    async def _settle(self, connection: McpConnection) -> None:
        """Wait until the unsettled server has said nothing changed for a whole window and
        lists the same at its start and end, then restart onto that list (or, back on the
        list this worker serves, serve its tools again)."""
        name = connection.server.name
        loop = asyncio.get_running_loop()
        seen: list[str] | None = None
        while True:
            await asyncio.sleep(self._settle_s)
            try:
                now = sorted(_fingerprint(t) for t in await connection.list_tools())
            except McpUnreachable:
                seen = None
                continue
            quiet = loop.time() - self._changed_at.get(name, 0.0) >= self._settle_s
            if now != seen or not quiet:
                seen = now  # changed meanwhile: another window
                continue
            connection.unsettled = None
            restart = now != self._listed.get(name)
            self._listed[name] = now
            log.warning("mcp_server_settled", server=name, restart=restart)
            if restart and self._on_change is not None:
                self._on_change(name)
            return

    async def close(self) -> None:
        for task in list(self._checks):
            task.cancel()
        await asyncio.gather(*(c.close() for c in self.connections), return_exceptions=True)


def _fingerprint(tool: object) -> str:
    dump = getattr(tool, "model_dump_json", None)
    return dump(exclude={"icons"}) if dump is not None else repr(tool)
