"""One MCP `tools/call` as a tool function of the catalog: authority, meta, result, errors.

The function runs inside the tool activity every catalog tool has (the door, the argument
checks, shared reads, the result cache, the downstream's cap, heartbeats: see
`workers.cache_assembly.tool_activities`), so all of that holds for an MCP tool as for a
native one. What is MCP's own is here: the roles the configuration allows are checked
before the call; the actor, the tenant and a side effect's idempotency key go in the
call's `_meta` (the server may apply its own rules); progress notifications heartbeat; a
cancelled activity cancels the request (the SDK sends `notifications/cancelled`); an
`isError` result fails the step for good, a broken transport is retried on a fresh
connection.
"""

from __future__ import annotations

import asyncio
import contextvars
import time
from datetime import timedelta
from typing import Any

import anyio
import mcp.types as types
from mcp.shared.exceptions import MCPError
from pydantic import ValidationError
from temporalio import activity
from temporalio.exceptions import ApplicationError
from temporalio.service import RPCError

from agentkeel.activities.mcp.connection import McpConnection, McpUnreachable
from agentkeel.schemas.actor import SYSTEM_ROLE
from agentkeel.schemas.errors import (
    INVALID_ARGUMENTS,
    MCP_INVALID_RESULT,
    MCP_TOOL_ERROR,
    MCP_TOOLS_CHANGING,
    MCP_UNAVAILABLE,
    NOT_AUTHORIZED,
)
from agentkeel.schemas.mcp_models import McpArguments, McpResult
from agentkeel.schemas.names import AGENT_WORKFLOW, TOOL_PROGRESS_SIGNAL
from agentkeel.schemas.tools.downstreams import ToolProgress
from agentkeel.sdk.context import ToolContext

__all__ = ["META_PREFIX", "McpCall"]

META_PREFIX = "io.agentkeel/"
"""Keys agentkeel puts in a call's `_meta`: `actor`, `tenant`, `idempotency_key`, `call_id`."""

_NOT_RETRIED = frozenset({types.INVALID_PARAMS, types.METHOD_NOT_FOUND, types.INVALID_REQUEST})
"""Protocol errors the same request would get again: the tool is unknown or refuses them."""
_MAX_ERROR_TEXT = 2000
PROGRESS_SIGNAL_EVERY_S = 1.0
"""A chatty server's progress reaches the run at most this often (each is a history event)."""


UNSETTLED_RETRY_S = 60.0
"""How long a call of an unsettled server's tool waits before it is tried again."""


class McpCall:
    """Calls tool `remote_name` of `connection`'s server for the catalog tool `name`."""

    def __init__(
        self,
        connection: McpConnection,
        *,
        name: str,
        remote_name: str,
        result: type[McpResult],
        roles: tuple[str, ...] | None,
        timeout_s: float,
    ) -> None:
        self._connection = connection
        self._name, self._remote = name, remote_name
        self._result, self._roles, self._timeout_s = result, roles, timeout_s

    def _authorize(self, ctx: ToolContext) -> None:
        if self._roles is None or ctx.actor is None or ctx.actor.role == SYSTEM_ROLE:
            return
        if ctx.actor.role not in self._roles:
            raise ApplicationError(
                f"{ctx.actor.describe()} may not call {self._name} (MCP server "
                f"{self._connection.server.name} allows {', '.join(self._roles) or 'no role'})",
                type=NOT_AUTHORIZED,
                non_retryable=True,
            )

    @staticmethod
    def meta(ctx: ToolContext) -> dict[str, Any]:
        meta: dict[str, Any] = {META_PREFIX + "tenant": ctx.tenant}
        if ctx.actor is not None:
            meta[META_PREFIX + "actor"] = ctx.actor.model_dump(mode="json", exclude_none=True)
        if ctx.idempotency_key is not None:
            meta[META_PREFIX + "idempotency_key"] = ctx.idempotency_key
        if ctx.call_id is not None:
            meta[META_PREFIX + "call_id"] = ctx.call_id
        return meta

    async def __call__(self, args: McpArguments, ctx: ToolContext) -> McpResult:
        self._authorize(ctx)
        if self._connection.unsettled is not None:
            # Never sent: retried later (perhaps on a worker the server has settled for).
            raise ApplicationError(
                self._connection.unsettled,
                type=MCP_TOOLS_CHANGING,
                next_retry_delay=timedelta(seconds=UNSETTLED_RETRY_S),
            )
        try:
            client = await self._connection.client()
        except McpUnreachable as exc:
            raise ApplicationError(str(exc), type=MCP_UNAVAILABLE) from None
        try:
            with anyio.fail_after(self._timeout_s):
                answer = await client.call_tool(
                    self._remote,
                    args.mcp_arguments(),
                    progress_callback=_progress(args),
                    meta=self.meta(ctx),  # type: ignore[arg-type]
                )
        except MCPError as exc:
            if exc.code in _NOT_RETRIED:
                kind = INVALID_ARGUMENTS if exc.code == types.INVALID_PARAMS else MCP_TOOL_ERROR
                raise ApplicationError(
                    f"{self._name}: {exc.error.message}", type=kind, non_retryable=True
                ) from None
            self._connection.broken(client)
            raise ApplicationError(
                f"{self._name}: {exc.error.message}", type=MCP_UNAVAILABLE
            ) from None
        except (asyncio.CancelledError, ApplicationError):
            raise
        except Exception as exc:  # the process died, the session is gone, a read timed out
            self._connection.broken(client)
            raise ApplicationError(
                f"{self._name}: MCP server {self._connection.server.name}: "
                f"{type(exc).__name__}: {exc}",
                type=MCP_UNAVAILABLE,
            ) from None
        return self._read(answer)

    def _read(self, answer: types.CallToolResult) -> McpResult:
        text = "\n".join(c.text for c in answer.content if isinstance(c, types.TextContent))
        if answer.is_error:
            raise ApplicationError(
                f"{self._name}: {text[:_MAX_ERROR_TEXT] or 'the tool reported an error'}",
                type=MCP_TOOL_ERROR,
                non_retryable=True,
            )
        structured = answer.structured_content
        if structured is None:
            if self._result.mcp_validator is not None:
                raise ApplicationError(
                    f"{self._name}: no structuredContent, though the tool declares an outputSchema",
                    type=MCP_INVALID_RESULT,
                    non_retryable=True,
                )
            return self._result.model_validate({"text": text})
        problem = self._result.problem(structured)
        if problem is not None:
            raise ApplicationError(
                f"{self._name}: structuredContent does not match its outputSchema: {problem}",
                type=MCP_INVALID_RESULT,
                non_retryable=True,
            )
        value = structured if isinstance(structured, dict) else {"value": structured}
        return self._result.model_validate(value)


def _progress(args: McpArguments) -> Any:
    """What a progress notification does: heartbeat with what the call has done so far,
    and tell the run (at most every `PROGRESS_SIGNAL_EVERY_S`), whose step shows it.

    The SDK runs the callback in its own task, outside the activity's context, so the
    heartbeat runs in a copy of the activity's context taken here."""
    context = contextvars.copy_context()
    in_activity = activity.in_activity()
    call_id = getattr(args, "call_id", None)
    handle = None
    if in_activity and call_id is not None:
        info = activity.info()
        if info.workflow_type == AGENT_WORKFLOW and info.workflow_id is not None:
            handle = activity.client().get_workflow_handle(
                info.workflow_id, run_id=info.workflow_run_id
            )
    last_signal = [0.0]

    async def report(progress: float, total: float | None, message: str | None) -> None:
        if not in_activity:
            return
        details = {"progress": progress, "total": total, "message": message}
        context.run(activity.heartbeat, details)
        now = time.monotonic()
        if handle is None or call_id is None or now - last_signal[0] < PROGRESS_SIGNAL_EVERY_S:
            return
        last_signal[0] = now
        try:
            note = ToolProgress(
                call_id=call_id,
                progress=progress,
                total=total,
                message=message[:200] if message else None,
            )
            await handle.signal(TOOL_PROGRESS_SIGNAL, note)
        except (RPCError, ValidationError):  # the run ended, or the server said nonsense
            return

    return report
