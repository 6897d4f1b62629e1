"""An MCP server's listed tools as catalog entries (`ToolSpec`), their policy decided here.

Annotations are hints a server gives about its own tools; the configuration may say
otherwise per tool (`McpToolPolicy`). The mapping, in full:

- `readOnlyHint` and `idempotentHint`: an idempotent read. Retried freely; cached only
  for the TTL the configuration gives (`cache_ttl_s`, never by default).
- `readOnlyHint` alone: a read, retried, never cached (the same call may answer anew).
- anything else (`destructiveHint`, no hints at all, `readOnlyHint: false`): a side
  effect. Never cached or speculated, allowed only when the request asks for it, given an
  idempotency key (sent in `_meta`), and put through approval when the configuration says.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta
from functools import partial

import mcp.types as types
import structlog

from agentkeel.activities.mcp.calls import McpCall
from agentkeel.activities.mcp.connection import McpConnection
from agentkeel.activities.mcp.rendering import mcp_render
from agentkeel.schemas.errors import MCP_INVALID_RESULT, MCP_TOOL_ERROR, NOT_AUTHORIZED, NOT_FOUND
from agentkeel.schemas.mcp_models import arguments_model, result_model
from agentkeel.schemas.tools.downstreams import Downstream
from agentkeel.schemas.tools.spec import RESERVED_ARGUMENTS, ToolSpec
from agentkeel.sdk.decorator import ToolDefinitionError, input_model
from agentkeel.sdk.mcp import McpServer, McpToolPolicy, mcp_tool_name

__all__ = ["McpPolicy", "mcp_downstream", "policy", "served_specs", "tool_specs"]

NON_RETRYABLE = (NOT_FOUND, NOT_AUTHORIZED, MCP_TOOL_ERROR, MCP_INVALID_RESULT)

log = structlog.get_logger(__name__)


class McpPolicy:
    """What the core does with one MCP tool: read or side effect, its cache, its approval."""

    def __init__(self, *, side_effect: bool, cache_ttl_s: float | None, needs_approval: bool):
        self.side_effect = side_effect
        self.cache_ttl_s = None if side_effect else cache_ttl_s
        self.needs_approval = side_effect and needs_approval


def policy(server: McpServer, tool: types.Tool) -> McpPolicy:
    """The policy of `tool` by its annotations and the configuration (which wins)."""
    override = server.tools.get(tool.name, McpToolPolicy())
    hints = tool.annotations or types.ToolAnnotations()
    read_only = hints.read_only_hint is True
    idempotent_read = read_only and hints.idempotent_hint is True
    side_effect = not read_only if override.side_effect is None else override.side_effect
    if override.side_effect is False:
        idempotent_read = True  # the operator says it is a read: theirs to cache or not
    ttl = override.cache_ttl_s if override.cache_ttl_s is not None else server.cache_ttl_s
    approval = server.approval if override.needs_approval is None else override.needs_approval
    return McpPolicy(
        side_effect=side_effect,
        cache_ttl_s=ttl if idempotent_read else None,
        needs_approval=approval,
    )


def mcp_downstream(server: McpServer) -> Downstream:
    """The service `server` is, capped across all runs and workers."""
    return Downstream(
        server.downstream_name,
        f"MCP server {server.name} ({server.transport})",
        default_concurrency=server.concurrency,
    )


def tool_specs(
    connection: McpConnection, tools: Sequence[types.Tool], downstream: Downstream
) -> list[ToolSpec]:
    """The catalog entries of `tools`, listed by `connection`'s server, in the server's order.

    Raises:
        ToolDefinitionError: a tool cannot be served as listed (its schema is invalid, an
            argument takes a name the workflow sets, two tools map to one catalog name).
    """
    server = connection.server
    wanted = set(server.include) if server.include is not None else None
    specs: list[ToolSpec] = []
    for tool in tools:
        if wanted is not None and tool.name not in wanted:
            continue
        specs.append(_spec(connection, tool, downstream))
    names = [s.name for s in specs]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise ToolDefinitionError(f"MCP server {server.name}: tools named twice as {twice}")
    return specs


def served_specs(
    connection: McpConnection, tools: Sequence[types.Tool], downstream: Downstream
) -> tuple[list[ToolSpec], dict[str, str]]:
    """The catalog entries of `tools` that can be served, and why each other one cannot
    (catalog name -> reason): a tool with an argument the workflow sets itself, a schema
    that does not load, or two tools mapping to one name is left out on its own, so one
    bad tool of a server takes nothing else down."""
    server = connection.server
    wanted = set(server.include) if server.include is not None else None
    specs: list[ToolSpec] = []
    refused: dict[str, str] = {}
    for tool in tools:
        if wanted is not None and tool.name not in wanted:
            continue
        try:
            specs.append(_spec(connection, tool, downstream))
        except ToolDefinitionError as exc:
            refused[mcp_tool_name(server, tool.name)] = str(exc)
    names = [s.name for s in specs]
    for twice in sorted({n for n in names if names.count(n) > 1}):
        refused[twice] = f"MCP server {server.name}: tools named twice as {twice!r}"
    return [s for s in specs if s.name not in refused], refused


def _spec(connection: McpConnection, tool: types.Tool, downstream: Downstream) -> ToolSpec:
    server = connection.server
    name = mcp_tool_name(server, tool.name)
    override = server.tools.get(tool.name, McpToolPolicy())
    decided = policy(server, tool)
    model_base = "".join(part.title() for part in name.split("_"))
    try:
        args = arguments_model(f"{model_base}Args", tool.input_schema)
        result = result_model(f"{model_base}Result", tool.output_schema)
    except Exception as exc:
        raise ToolDefinitionError(f"MCP tool {tool.name} of {server.name}: {exc}") from None
    reserved = sorted(RESERVED_ARGUMENTS & set(args.model_fields))
    if reserved:
        raise ToolDefinitionError(
            f"MCP tool {tool.name} of {server.name}: arguments named {reserved}, which the "
            "workflow sets itself (leave it out with `include`)"
        )
    for arg in override.identity_args:
        if arg not in args.model_fields:
            raise ToolDefinitionError(f"MCP tool {tool.name}: identity_args names unknown {arg!r}")
    description = override.description or tool.description or tool.title or tool.name
    call = McpCall(
        connection,
        name=name,
        remote_name=tool.name,
        result=result,
        roles=server.roles,
        timeout_s=override.timeout_s or server.timeout_s,
    )
    timeout_s = override.timeout_s or server.timeout_s
    return ToolSpec(
        name=name,
        description=" ".join(description.split()),
        args_model=args,
        result_model=result,
        # Temporal's timeout a little over the call's own, so the call says why it ended.
        timeout=timedelta(seconds=timeout_s + 5),
        max_attempts=override.retries or server.retries,
        idempotent=not decided.side_effect,
        cache_ttl=timedelta(seconds=decided.cache_ttl_s) if decided.cache_ttl_s else None,
        expected_ms=override.expected_ms or 50,
        input_model=input_model(name, args, side_effect=decided.side_effect),
        identity_args=tuple(override.identity_args),
        asked_by=tuple(override.asked_by),
        needs_approval=decided.needs_approval,
        non_retryable_errors=NON_RETRYABLE,
        downstream=downstream,
        roles=server.roles,
        fn=call,
        takes_context=True,
        render=partial(mcp_render, name),
    )


def without_collisions(
    specs: list[ToolSpec],
    taken: set[str],
    withdrawn: dict[str, str],
    intents: dict[str, list[str]],
) -> list[ToolSpec]:
    """`specs` without the tools whose catalog name another server's tool has (both are
    withdrawn, with why) or one of `taken` has (the domain's own tools and the built-ins:
    theirs stands, this one is logged and left out); `intents` lose them too."""
    names = [s.name for s in specs]
    twice = {n for n in names if names.count(n) > 1}
    for name in sorted(twice):
        reason = f"MCP tool name {name!r} is listed by more than one server"
        log.warning("mcp_tool_refused", tool=name, error=reason)
        withdrawn[name] = reason
    for name in sorted(taken & set(names)):
        log.warning(
            "mcp_tool_refused",
            tool=name,
            error=f"MCP tool name {name!r} is the domain's own or a built-in tool: "
            "that one is served (set the server's `prefix`)",
        )
    dropped = twice | taken
    for intent, members in intents.items():
        intents[intent] = [m for m in members if m not in dropped]
    return [s for s in specs if s.name not in dropped]
