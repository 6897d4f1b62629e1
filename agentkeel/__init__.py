"""agentkeel: a durable agent orchestrator on Temporal, for the domain a business brings.

The public surface, all under this one namespace:

- a domain and its tools: `Domain`, `tool`, `ToolArgs`, `ToolContext`, `ToolCall`, `Role`,
  `Downstream`, `EntityPattern`, `Vocabulary`, `Migrations`, `DemoQuestion`,
  `LocalService`, `ToolSetup`, MCP servers as tool sources (`McpServer`,
  `McpToolPolicy`), and the error types tools raise (`not_found`, ...);
- the request and result models: `AgentRequest`, `RunOptions`, `Actor`, `AgentResult`,
  `Plan`;
- the client: `AgentClient` (cache fast path, coalescing, streaming) and its `Settings`;
- the worker entry point: `run_worker(kind)` (`kind` "cpu" or "inference");
- checks for a domain's own tests: `agentkeel.testing` (`check_plan`: a question planned
  and held to a run's rules, no stack).

The repository's top-level folders are its sub-packages, one room per program or
concern: the core (`agentkeel.schemas` the wire contracts, `agentkeel.sdk` the domain
SDK, `agentkeel.workflows`, `agentkeel.activities`, `agentkeel.inference`), the programs
(`agentkeel.workers`, `agentkeel.gateway`, `agentkeel.cli`), the library services import
(`agentkeel.client`), and what they share (`agentkeel.settings`); the
example shop is `agentkeel.examples.shop`. The client, the settings and the worker entry
point are imported on first use, so `import agentkeel` stays light.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agentkeel.schemas.actor import Actor
from agentkeel.schemas.errors import NOT_AUTHORIZED, NOT_FOUND
from agentkeel.schemas.plan.model import Plan
from agentkeel.schemas.request import AgentRequest, RunOptions
from agentkeel.schemas.result import AgentResult
from agentkeel.schemas.text import FreeText
from agentkeel.schemas.tools.downstreams import Downstream
from agentkeel.schemas.tools.spec import ActorScoped, ToolArgs, ToolSpec, money
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
from agentkeel.sdk.patterns import PlanPattern

if TYPE_CHECKING:
    from agentkeel.client.agent_client import AgentClient
    from agentkeel.inference.patterns import PatternPolicy, pattern_policy
    from agentkeel.settings.model import Settings
    from agentkeel.workers.entry import run_worker

__all__ = [
    "NOT_AUTHORIZED",
    "NOT_FOUND",
    "Actor",
    "ActorScoped",
    "AgentClient",
    "AgentRequest",
    "AgentResult",
    "DemoQuestion",
    "Domain",
    "DomainError",
    "Downstream",
    "EntityPattern",
    "FreeText",
    "LocalService",
    "McpServer",
    "McpToolPolicy",
    "Migrations",
    "PatternPolicy",
    "Plan",
    "PlanPattern",
    "Role",
    "RunOptions",
    "Settings",
    "ToolArgs",
    "ToolCall",
    "ToolContext",
    "ToolDefinitionError",
    "ToolSetup",
    "ToolSpec",
    "Vocabulary",
    "money",
    "not_found",
    "pattern_policy",
    "run_worker",
    "tool",
]

__version__ = "0.1.0"

_LAZY = {
    "AgentClient": "agentkeel.client.agent_client",
    "PatternPolicy": "agentkeel.inference.patterns",
    "pattern_policy": "agentkeel.inference.patterns",
    "Settings": "agentkeel.settings.model",
    "run_worker": "agentkeel.workers.entry",
}


def __getattr__(name: str) -> Any:
    # The client, the worker and the policies pull in Temporal's client, the worker stack
    # and the inference code: loaded when asked for, not by every `from agentkeel import
    # tool` of a domain module or every service that only calls agentkeel.
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'agentkeel' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)
