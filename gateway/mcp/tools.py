"""agentkeel as an MCP server: its tools, for any transport.

`start_run` starts a run and waits for its answer, reporting progress notifications
while it runs (when the client sent a progress token); the run id is in the result
whatever happens, and the run goes on if the client goes away. `get_run` reads a run,
`list_awaiting_approval` the runs waiting for a decision, `decide_approval` approves or
rejects, `cancel_run` cancels. Who calls (`Caller`) comes from the transport: the
gateway's bearer key over HTTP, the local user over stdio. A refusal is a tool error
(`isError`) saying why, as the gateway's `4xx` would.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations
from pydantic import ValidationError

from agentkeel.client.budgets import BudgetExhaustedError
from agentkeel.gateway.keys import Caller, Refused
from agentkeel.gateway.mcp.operations import Operations
from agentkeel.gateway.quotas import OverQuota, QuotasUnavailable
from agentkeel.schemas.errors import BUDGET_EXHAUSTED, describe_validation
from agentkeel.schemas.request import AgentRequest

__all__ = ["CallerOf", "build_mcp_server"]

CallerOf = Callable[[Context], Caller]
"""Who makes the call `ctx` belongs to (`Refused` if nobody the deployment knows)."""
T = TypeVar("T")

READ = ToolAnnotations(readOnlyHint=True, idempotentHint=True, openWorldHint=False)
START = ToolAnnotations(readOnlyHint=False, destructiveHint=False, openWorldHint=True)
DECIDE = ToolAnnotations(readOnlyHint=False, destructiveHint=True, openWorldHint=False)


async def _answer(call: Awaitable[T]) -> T:
    try:
        return await call
    except Refused as exc:
        raise ToolError(f"{exc.status}: {exc.detail}") from None
    except OverQuota as exc:
        problem = exc.problem
        raise ToolError(
            f"429: {problem.detail} ({problem.quota} per {problem.scope}; retry after "
            f"{problem.retry_after_s} s)"
        ) from None
    except QuotasUnavailable as exc:
        raise ToolError(f"503: {exc}; retry after {exc.retry_after_s} s") from None
    except BudgetExhaustedError as exc:
        raise ToolError(f"429: {BUDGET_EXHAUSTED}: {exc}") from None
    except ValidationError as exc:
        raise ToolError(f"invalid request: {describe_validation(exc)}") from None


def _mcp_server() -> MCPServer:
    """The SDK's server, leaving the host process's logging as it was: `MCPServer()` calls
    `logging.basicConfig` with a rich-traceback handler at INFO, which in a process that
    has not configured logging (one embedding `create_app`) renders every warning of every
    library as a rich panel on the event loop's thread."""
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    try:
        return MCPServer(
            "agentkeel",
            instructions=(
                "Runs are durable: start_run answers with the run's workflow_id even when it "
                "is still running; read it later with get_run. A side effect may wait for an "
                "approval: see list_awaiting_approval and decide_approval."
            ),
        )
    finally:
        root.handlers[:] = handlers
        root.setLevel(level)


def build_mcp_server(ops: Operations, caller_of: CallerOf) -> MCPServer:
    """The MCP server onto `ops`' deployment, callers known by `caller_of`."""
    server = _mcp_server()

    def who(ctx: Context) -> Caller:
        try:
            return caller_of(ctx)
        except Refused as exc:
            raise ToolError(f"{exc.status}: {exc.detail}") from None

    _serve_start_run(server, ops, who)

    @server.tool(annotations=READ)
    async def get_run(workflow_id: str, ctx: Context) -> dict[str, Any]:
        """A run's state: its progress while it runs, its answer and steps once done."""
        return await _answer(ops.get_run(who(ctx), workflow_id))

    @server.tool(annotations=READ)
    async def list_awaiting_approval(ctx: Context) -> dict[str, Any]:
        """The runs waiting for an approver, each with the side effect it waits for."""
        return {"runs": await _answer(ops.awaiting_approval(who(ctx)))}

    @server.tool(annotations=DECIDE)
    async def decide_approval(
        workflow_id: str,
        approval_id: int,
        approved: bool,
        ctx: Context,
        reason: str = "",
        approver: str | None = None,
    ) -> dict[str, Any]:
        """Approve (`approved: true`) or reject the side effect a run waits for, named by
        its `approval_id` (from list_awaiting_approval: `awaiting.approval_id`); a decision
        for another, a decided or an unknown approval is refused. With an API key the
        approver is the key's actor."""
        decided = ops.decide(
            who(ctx),
            workflow_id,
            approved=approved,
            reason=reason,
            approver=approver,
            approval_id=approval_id,
        )
        return await _answer(decided)

    @server.tool(annotations=DECIDE)
    async def cancel_run(workflow_id: str, ctx: Context) -> dict[str, Any]:
        """Cancel a run: its tools stop and it ends `canceled`."""
        return await _answer(ops.cancel(who(ctx), workflow_id))

    return server


def _serve_start_run(server: MCPServer, ops: Operations, who: CallerOf) -> None:
    """`start_run`: the one tool that builds a request of its own arguments and reports
    the run's progress to the client while it waits."""

    @server.tool(annotations=START)
    async def start_run(
        question: str,
        ctx: Context,
        plan: dict[str, Any] | None = None,
        request_id: str | None = None,
        conversation_id: str | None = None,
        actor: dict[str, Any] | None = None,
        wait_s: float = 60.0,
    ) -> dict[str, Any]:
        """Ask agentkeel a question (or run a plan of its tools) and wait up to `wait_s`
        for the answer. The result has the run's `workflow_id`; a run still going on
        (waiting for an approval, a watch) is `running`: read it later with get_run."""
        caller = who(ctx)
        fields: dict[str, Any] = {"question": question}
        for name, value in (
            ("plan", plan),
            ("request_id", request_id),
            ("conversation_id", conversation_id),
            ("actor", actor),
        ):
            if value is not None:
                fields[name] = value

        async def progress(done: float, total: float | None, message: str) -> None:
            await ctx.report_progress(done, total, message)

        async def go() -> dict[str, Any]:
            request = AgentRequest.model_validate(fields)
            return await ops.start_and_wait(caller, request, wait_s, progress)

        return await _answer(go())
