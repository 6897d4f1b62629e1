"""Tools as the core knows them: `ToolSpec`, the `agentkeel.tool` decorator, the context a
tool receives, the built-in `wait`, and the catalog of the domain this process serves
(`catalog`: `TOOLS`, `SIDE_EFFECT_TOOLS`, `catalog_version`)."""

from agentkeel.schemas.tools.catalog import (
    ACTIVITY_TOOLS,
    INTENT_JOINER,
    SIDE_EFFECT_TOOLS,
    TOOLS,
    active_domain,
    catalog_version,
    has_side_effect,
    install_domain,
    requested_side_effects,
)
from agentkeel.schemas.tools.context import ToolCall, ToolContext, not_found
from agentkeel.schemas.tools.decorator import ToolDefinitionError, tool
from agentkeel.schemas.tools.spec import ActorScoped, Render, ToolArgs, ToolSpec, money
from agentkeel.schemas.tools.timers import WAIT, WaitArgs, Waited

__all__ = [
    "ACTIVITY_TOOLS",
    "INTENT_JOINER",
    "SIDE_EFFECT_TOOLS",
    "TOOLS",
    "WAIT",
    "ActorScoped",
    "Render",
    "ToolArgs",
    "ToolCall",
    "ToolContext",
    "ToolDefinitionError",
    "ToolSpec",
    "WaitArgs",
    "Waited",
    "active_domain",
    "catalog_version",
    "has_side_effect",
    "install_domain",
    "money",
    "not_found",
    "requested_side_effects",
    "tool",
]
