# The toolbox writes a few bytes of test state per call: blocking file I/O is fine here.
# ruff: noqa: ASYNC240
"""An MCP server of the test suite, for what the reference servers cannot show.

Run as `python tests/support/mcp_toolbox.py` (stdio) or `... --http PORT` (streamable HTTP).
It writes what it saw to the folder `TOOLBOX_STATE` names (one line per event in
`events.log`), so a test can tell what reached the server: a call's `_meta`, a
cancellation, an effect made once per idempotency key.

- `slow(seconds)`: a read that reports progress every 0.2 s; a cancel ends it early.
- `fail(reason)`: answers with `isError`.
- `crash_once()`: the process exits mid-call the first time, answers the next.
- `append(text, delay_s)`: a side effect (destructive) made at most once per idempotency key.
- `grow()`: adds the tool `grown` and says the tool list changed.
- `grow_bad()`: adds `bad(tenant)`, whose argument takes a name the workflow sets itself.
- `forget(name)`: a side effect with no identity arguments configured (each call an event).
- `whoami()`: the `_meta` agentkeel sent.
- `lookup(key)`: an idempotent read that counts the calls reaching the server.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
from pathlib import Path
from typing import Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations

STATE = Path(os.environ.get("TOOLBOX_STATE", "/tmp/toolbox"))
READ = ToolAnnotations(readOnlyHint=True, idempotentHint=True)
EFFECT = ToolAnnotations(readOnlyHint=False, destructiveHint=True)

server = MCPServer("toolbox")


def _event(kind: str, **fields: Any) -> None:
    STATE.mkdir(parents=True, exist_ok=True)
    with (STATE / "events.log").open("a") as log:
        log.write(json.dumps({"event": kind, "pid": os.getpid(), **fields}) + "\n")


def _meta(ctx: Context) -> dict[str, Any]:
    meta = ctx.request_context.meta
    return dict(meta) if meta else {}


@server.tool(annotations=READ)
async def slow(seconds: float, ctx: Context) -> dict[str, Any]:
    """Wait `seconds`, reporting progress; a cancelled call stops early."""
    _event("slow_started", seconds=seconds)
    steps = max(1, int(seconds / 0.2))
    try:
        for step in range(steps):
            await ctx.report_progress(step, steps, f"step {step}")
            await asyncio.sleep(seconds / steps)
    except asyncio.CancelledError:
        _event("slow_cancelled")
        raise
    _event("slow_finished")
    return {"waited": seconds}


@server.tool(annotations=READ)
async def fail(reason: str) -> str:
    """Always fails with `reason`."""
    raise ToolError(reason)


@server.tool(annotations=READ)
async def crash_once() -> dict[str, Any]:
    """Kill this server process the first time; answer on the next."""
    marker = STATE / "crashed"
    if not marker.exists():
        STATE.mkdir(parents=True, exist_ok=True)
        marker.write_text(str(os.getpid()))
        _event("crashing")
        os._exit(3)
    _event("answered_after_crash")
    return {"pid": os.getpid()}


@server.tool(annotations=EFFECT)
async def append(text: str, ctx: Context, delay_s: float = 0.0) -> dict[str, Any]:
    """Append `text` to the ledger once per idempotency key (after `delay_s`)."""
    key = _meta(ctx).get("io.agentkeel/idempotency_key")
    _event("append_started", key=key, text=text)
    await asyncio.sleep(delay_s)
    ledger = STATE / "ledger.jsonl"
    seen = (
        {json.loads(line)["key"] for line in ledger.read_text().splitlines()}
        if ledger.exists()
        else set()
    )
    if key is None or key not in seen:
        with ledger.open("a") as out:
            out.write(json.dumps({"key": key, "text": text}) + "\n")
        _event("appended", key=key)
        return {"appended": True, "text": text}
    _event("append_repeated", key=key)
    return {"appended": False, "text": text}


@server.tool(annotations=READ)
async def whoami(ctx: Context) -> dict[str, Any]:
    """The `_meta` this call carried."""
    return {"meta": _meta(ctx)}


@server.tool(annotations=READ)
async def lookup(key: str) -> dict[str, Any]:
    """The value of `key` (each call that reaches the server is an event)."""
    _event("lookup_called", key=key)
    return {"key": key, "value": f"value of {key}"}


async def grown() -> str:
    """A tool that exists only after `grow`."""
    return "grown"


@server.tool(annotations=EFFECT)
async def grow(ctx: Context) -> str:
    """Add the tool `grown` and announce that the tool list changed."""
    server.add_tool(grown, annotations=READ)
    (STATE / "grown").write_text("1")  # a restarted toolbox keeps it
    await ctx.notify_tools_changed()
    try:
        await ctx.request_context.session.send_tool_list_changed()
    except Exception:  # a 2026-07-28 connection hears of it through its listen stream only
        pass
    return "grew"


@server.tool(annotations=EFFECT)
async def forget(name: str) -> dict[str, Any]:
    """Forget the note `name`."""
    _event("forgotten", name=name)
    return {"forgotten": name}


async def bad(tenant: str) -> str:
    """A tool whose argument takes a reserved name: it cannot be served."""
    return tenant


@server.tool(annotations=EFFECT)
async def grow_bad(ctx: Context) -> str:
    """Add the tool `bad` and announce that the tool list changed."""
    server.add_tool(bad, annotations=READ)
    (STATE / "bad").write_text("1")
    await ctx.notify_tools_changed()
    try:
        await ctx.request_context.session.send_tool_list_changed()
    except Exception:
        pass
    return "grew a bad tool"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--http", type=int, default=0)
    args = parser.parse_args()
    _event("server_started")
    if (STATE / "grown").exists():
        server.add_tool(grown, annotations=READ)
    if (STATE / "bad").exists():
        server.add_tool(bad, annotations=READ)
    if args.http:
        server.run("streamable-http", port=args.http)
    else:
        server.run("stdio")


if __name__ == "__main__":
    main()
