"""One worker's connection to one MCP server, kept open and made again when it breaks.

A stdio server is one process per worker; an HTTP server one session per worker. Either
is opened on first use (or at start, to list the tools) and held by a task of its own,
because the SDK's client lives in an anyio task group that must be entered and left in
one task. When the process dies or the session is gone (a server restart), the next call
opens a fresh one: the failed call itself is retried by Temporal (`McpUnavailable`).
"""

from __future__ import annotations

import asyncio
import os
import shutil
import sys
from collections.abc import Callable, Mapping
from typing import Any

import mcp.types as types
import structlog
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.client.subscriptions import ListenNotSupportedError
from mcp.shared._httpx_utils import create_mcp_http_client

from agentkeel.sdk.mcp import McpServer

__all__ = ["McpConnection", "McpUnreachable", "resolve_command"]

log = structlog.get_logger(__name__)


class McpUnreachable(ConnectionError):
    """The server could not be started or reached; the message says which and why."""


def resolve_command(server: McpServer, environ: Mapping[str, str]) -> str:
    """The program a stdio server's `command` names: a path as given; a bare name from the
    server's own `env` `PATH` where it sets one, then the running interpreter's environment
    (the directory of `sys.executable`: a venv's `bin`, where `pip install` put the server,
    whether or not the venv is activated), then `PATH`. A relative path is taken from the
    server's `cwd` where it has one, as the started process resolves it.

    Raises:
        McpUnreachable: no such program, naming where it was looked for and the fix."""
    command = server.command
    assert command is not None
    if os.sep in command or (os.altsep and os.altsep in command):
        # A relative path is the server's own working directory's, as the process sees it.
        where = os.path.join(server.cwd, command) if server.cwd else command
        if not os.path.exists(where):
            raise McpUnreachable(
                f"MCP server {server.name}: command {command!r} does not exist; "
                "set `command` to the server program's path"
            )
        return command
    own_bin = os.path.dirname(sys.executable)
    beside = os.path.join(own_bin, command)
    own_path = server.env.get("PATH")
    if own_path:  # the server's configuration says where its programs are: that first
        found = shutil.which(command, path=own_path)
        if found is not None:
            return found
    if os.path.isfile(beside) and os.access(beside, os.X_OK):
        return beside
    path = own_path or environ.get("PATH") or os.defpath
    found = shutil.which(command, path=path)
    if found is not None:
        return found
    raise McpUnreachable(
        f"MCP server {server.name}: command {command!r} was found neither in this Python "
        f"environment ({own_bin}) nor on PATH; install the server into the environment "
        f"agentkeel runs in (`{os.path.join(own_bin, 'pip')} install ...`) or set `command` "
        "to its full path"
    )


class McpConnection:
    """The live client of `server` for this worker.

    Args:
        server: What to connect to.
        environ: Where `bearer_token_env` is read (default: the environment).
        on_tools_changed: Called (with this connection) when the server says its tool list
            changed (`notifications/tools/list_changed`).
    """

    def __init__(
        self,
        server: McpServer,
        *,
        environ: Mapping[str, str] | None = None,
        on_tools_changed: Callable[[McpConnection], None] | None = None,
    ) -> None:
        self.server = server
        self._environ = os.environ if environ is None else environ
        self._on_tools_changed = on_tools_changed
        self._client: Client | None = None
        self._holder: asyncio.Task[None] | None = None
        self._stop: asyncio.Event | None = None
        self._lock = asyncio.Lock()
        self.opened = 0
        """How many times a connection was opened (1 + restarts after a break)."""
        self.unsettled: str | None = None
        """Why its tools are refused now: its list keeps changing (`McpToolSource`)."""

    def _target(self) -> Any:
        server = self.server
        if server.command is not None:
            return StdioServerParameters(
                command=resolve_command(server, self._environ),
                args=list(server.args),
                env=server.env,
                cwd=server.cwd,
            )
        assert server.url is not None
        headers = dict(server.headers)
        if server.bearer_token_env:
            token = self._environ.get(server.bearer_token_env)
            if not token:
                raise McpUnreachable(
                    f"MCP server {server.name}: {server.bearer_token_env} is not set"
                )
            headers["Authorization"] = f"Bearer {token}"
        return streamable_http_client(server.url, http_client=create_mcp_http_client(headers))

    def _tools_changed(self) -> None:
        log.info("mcp_tools_changed", server=self.server.name)
        if self._on_tools_changed is not None:
            self._on_tools_changed(self)

    async def _notified(self, message: Any) -> None:
        # Servers of the handshake era send `notifications/tools/list_changed` unasked.
        if isinstance(message, types.ToolListChangedNotification):
            self._tools_changed()

    async def _listen(self, client: Client) -> None:
        """Servers of the 2026-07-28 revision tell only a `subscriptions/listen` stream."""
        tools = client.server_capabilities.tools
        if tools is None or not tools.list_changed:
            return
        try:
            async with client.listen(tools_list_changed=True) as events:
                async for _ in events:
                    self._tools_changed()
        except ListenNotSupportedError:
            return  # a handshake-era server: its notifications reach `_notified`
        except Exception as exc:
            log.info("mcp_listen_ended", server=self.server.name, error=repr(exc))

    async def _hold(self, ready: asyncio.Future[Client], stop: asyncio.Event) -> None:
        try:
            async with Client(
                self._target(),
                message_handler=self._notified,
                cache=None,  # agentkeel's caches decide what is reused, by policy
                client_info=types.Implementation(name="agentkeel", version="1"),
            ) as client:
                ready.set_result(client)
                listener = asyncio.get_running_loop().create_task(self._listen(client))
                try:
                    await stop.wait()
                finally:
                    listener.cancel()
        except BaseException as exc:
            if not ready.done():
                ready.set_exception(exc)
            elif not isinstance(exc, asyncio.CancelledError):
                log.warning("mcp_connection_lost", server=self.server.name, error=repr(exc))

    async def client(self) -> Client:
        """The open client, opening one (again) when there is none or it broke."""
        current = self._client
        if current is not None and self._holder is not None and not self._holder.done():
            return current
        async with self._lock:
            if self._client is not None and self._holder is not None and not self._holder.done():
                return self._client
            await self._close_holder()
            ready: asyncio.Future[Client] = asyncio.get_running_loop().create_future()
            stop = asyncio.Event()
            holder = asyncio.get_running_loop().create_task(self._hold(ready, stop))
            try:
                client = await asyncio.wait_for(
                    asyncio.shield(ready), timeout=self.server.list_timeout_s
                )
            except Exception as exc:
                stop.set()
                holder.cancel()
                if isinstance(exc, McpUnreachable):
                    raise  # says which server and why already
                raise McpUnreachable(
                    f"MCP server {self.server.name} ({self.server.transport}): "
                    f"{type(exc).__name__}: {exc}"
                ) from None
            self._client, self._holder, self._stop = client, holder, stop
            self.opened += 1
            return client

    def broken(self, client: Client) -> None:
        """Say that `client` failed in transport: the next call opens a fresh connection."""
        if self._client is client and self._stop is not None:
            self._client = None
            self._stop.set()

    async def list_tools(self) -> list[types.Tool]:
        """Every tool the server lists now (all pages)."""
        client = await self.client()
        tools: list[types.Tool] = []
        cursor: str | None = None
        try:
            async with asyncio.timeout(self.server.list_timeout_s):
                while True:
                    page = await client.list_tools(cursor=cursor, cache_mode="refresh")
                    tools.extend(page.tools)
                    cursor = page.next_cursor
                    if cursor is None:
                        return tools
        except Exception as exc:
            self.broken(client)
            raise McpUnreachable(
                f"MCP server {self.server.name}: listing its tools failed ({exc!r})"
            ) from None

    async def _close_holder(self) -> None:
        holder, stop = self._holder, self._stop
        self._client = self._holder = self._stop = None
        if holder is None or stop is None:
            return
        stop.set()
        try:
            await asyncio.wait_for(holder, timeout=5)
        except (TimeoutError, asyncio.CancelledError, Exception):
            holder.cancel()

    async def close(self) -> None:
        """Close the connection (a stdio server's process is stopped)."""
        async with self._lock:
            await self._close_holder()
