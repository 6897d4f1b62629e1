"""The domain SDK: what a business writes its domain against.

`Domain` and its parts (roles, entity patterns, vocabulary, migrations, local services),
the `tool` decorator and the `ToolContext` a tool receives, MCP servers as tool sources,
and the loading of the domain a process serves (`AGENTKEEL_DOMAIN`). The wire contracts
these build on (`ToolSpec`, `ToolArgs`, requests, results) stay in `schemas`.
"""

from agentkeel.sdk.context import ToolCall, ToolContext, not_found
from agentkeel.sdk.decorator import ToolDefinitionError, tool
from agentkeel.sdk.domain import (
    DemoQuestion,
    Domain,
    DomainError,
    EntityPattern,
    LocalService,
    Migrations,
    Role,
    ToolSetup,
    Vocabulary,
)
from agentkeel.sdk.mcp import McpServer, McpToolPolicy
from agentkeel.sdk.serving import active_domain, install_domain

__all__ = [
    "DemoQuestion",
    "Domain",
    "DomainError",
    "EntityPattern",
    "LocalService",
    "McpServer",
    "McpToolPolicy",
    "Migrations",
    "Role",
    "ToolCall",
    "ToolContext",
    "ToolDefinitionError",
    "ToolSetup",
    "Vocabulary",
    "active_domain",
    "install_domain",
    "not_found",
    "tool",
]
