"""MCP servers as a source of a domain's tools: how one is reached, named and governed.

An `McpServer` is configured per domain (`Domain.mcp_servers`) or per deployment
(`AGENTKEEL_MCP_SERVERS`, a JSON list of the same objects). When a worker starts, each
server's tools are listed and become catalog entries like native tools (`activities.mcp`):
their JSON Schemas check plan arguments, their descriptions reach the planner, and their
annotations decide their policy (read or side effect, cache, approval), overridable per
tool here. `docs/mcp.md` walks through it.
"""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    TypeAdapter,
    ValidationError,
    model_validator,
)

__all__ = ["McpServer", "McpToolPolicy", "mcp_tool_name", "parse_mcp_servers"]

ServerName = Annotated[str, StringConstraints(pattern=r"^[a-z][a-z0-9_]{0,39}$")]

_NOT_A_NAME = re.compile(r"[^a-z0-9_]+")


class McpToolPolicy(BaseModel):
    """What the configuration says of one tool, over what its annotations say."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    side_effect: bool | None = None
    """True: a side effect whatever its hints say; False: a read (trust the operator, not
    the server). None: from the annotations."""
    cache_ttl_s: float | None = Field(default=None, gt=0)
    """For an idempotent read: how long its results are reused (over the server's)."""
    needs_approval: bool | None = None
    """For a side effect: every call waits for an approver (over the server's `approval`)."""
    identity_args: tuple[str, ...] = ()
    """For a side effect: the arguments naming what it changes (idempotency keys name them,
    and provenance checks them); none: every argument does."""
    asked_by: tuple[str, ...] = ()
    """For a side effect: the words with which a request asks for it (`ToolSpec.asked_by`)."""
    timeout_s: float | None = Field(default=None, gt=0)
    retries: int | None = Field(default=None, ge=1)
    description: str | None = None
    """What models read about the tool, instead of the server's description."""
    expected_ms: int | None = Field(default=None, ge=1)
    intents: tuple[str, ...] = ()
    """The domain's intents this tool joins, besides its server's `intents`: a request read
    as one of them may cause its side effect (`docs/mcp.md`)."""


class McpServer(BaseModel):
    """One MCP server: a stdio command or a streamable HTTP URL, and its tools' policy."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: ServerName
    """Lower-case letters, digits and `_`: names its downstream (`mcp_<name>`) and, by
    default, prefixes its tools."""
    command: str | None = None
    """A stdio server: the program to run (one process per worker, restarted when it dies)."""
    args: tuple[str, ...] = ()
    env: dict[str, str] = Field(default_factory=dict)
    """Variables for the stdio server, on top of a minimal safe environment (the worker's
    own secrets are not passed on)."""
    cwd: str | None = None
    url: str | None = Field(default=None, pattern=r"^https?://")
    """A streamable HTTP server: its endpoint (one session per worker, re-made after the
    server restarts)."""
    headers: dict[str, str] = Field(default_factory=dict)
    bearer_token_env: str | None = None
    """The variable holding a bearer token for `url` (read at start; never in config)."""
    prefix: str | None = None
    """Put before each tool's name in the catalog; default `<name>_`. A tool's catalog name
    is its activity type: changing the prefix renames every tool (a contract)."""
    include: tuple[str, ...] | None = None
    """Only these of the server's tools (its own names); None: every one."""
    roles: tuple[str, ...] | None = None
    """The actor roles that may call its tools (checked before each call); None: every
    role. The built-in `system` role always may."""
    cache_ttl_s: float | None = Field(default=None, gt=0)
    """How long an idempotent read's results are reused; None: never cached (the default,
    whatever the server's hints say)."""
    approval: bool = False
    """Every side effect of this server waits for an approver."""
    concurrency: int | None = Field(default=None, ge=1)
    """Its calls in flight at once across all runs and workers (the downstream's cap;
    `AGENTKEEL_DOWNSTREAM_MCP_<NAME>_CONCURRENCY` overrides it)."""
    timeout_s: float = Field(default=30.0, gt=0)
    """Start-to-close timeout of one call attempt."""
    retries: int = Field(default=3, ge=1)
    """Attempts in all of a call that failed in transport (an `isError` is never retried)."""
    list_timeout_s: float = Field(default=20.0, gt=0)
    """How long the worker waits at start for the server to list its tools."""
    tools: dict[str, McpToolPolicy] = Field(default_factory=dict)
    """Per-tool overrides, by the server's own tool name."""
    intents: tuple[str, ...] = ()
    """The domain's intents every tool of this server joins. A domain that declares intents
    names them; one that declares none gets these beside each tool's own."""

    @model_validator(mode="after")
    def _one_transport(self) -> McpServer:
        if (self.command is None) == (self.url is None):
            raise ValueError(f"MCP server {self.name}: give exactly one of command or url")
        if self.command is None and (self.args or self.env or self.cwd):
            raise ValueError(f"MCP server {self.name}: args, env and cwd are for a stdio command")
        if self.url is None and (self.headers or self.bearer_token_env):
            raise ValueError(f"MCP server {self.name}: headers and bearer token are for a url")
        return self

    @property
    def tool_prefix(self) -> str:
        return f"{self.name}_" if self.prefix is None else self.prefix

    @property
    def downstream_name(self) -> str:
        return f"mcp_{self.name}"

    @property
    def transport(self) -> str:
        return "stdio" if self.command is not None else "http"

    def intents_of(self, tool: str) -> tuple[str, ...]:
        """The intents the server's tool `tool` (its own name) joins: the server's, then the
        tool's own, each once."""
        own = self.tools[tool].intents if tool in self.tools else ()
        return tuple(dict.fromkeys((*self.intents, *own)))


def mcp_tool_name(server: McpServer, tool: str) -> str:
    """The catalog (and activity) name of `server`'s tool `tool`: prefixed, lower-case, and
    letters, digits and `_` only (`get-sum` of server `everything` is `everything_get_sum`)."""
    return server.tool_prefix + _NOT_A_NAME.sub("_", tool.lower()).strip("_")


_SERVER_LIST: TypeAdapter[list[McpServer]] = TypeAdapter(list[McpServer])


def parse_mcp_servers(text: str) -> list[McpServer]:
    """A JSON list of MCP servers (`AGENTKEEL_MCP_SERVERS`); empty text: none.

    Raises:
        ValueError: the text is no such list; the message names the first bad field.
    """
    if not text.strip():
        return []
    try:
        return _SERVER_LIST.validate_json(text)
    except ValidationError as exc:
        error = exc.errors(include_url=False)[0]
        where = ".".join(str(part) for part in error["loc"]) or "the list"
        raise ValueError(f"MCP servers: {where}: {error['msg']}") from None
