"""Tools as the core knows them: `ToolSpec`, the built-in `wait`, and the catalog of the
domain this process serves (`catalog`: `TOOLS`, `SIDE_EFFECT_TOOLS`, `catalog_version`).

The `agentkeel.tool` decorator and the `ToolContext` a tool receives are the domain SDK's
(`agentkeel.sdk`)."""

from agentkeel.schemas.tools.catalog import (
    ACTIVITY_TOOLS,
    INTENT_JOINER,
    SIDE_EFFECT_TOOLS,
    TOOLS,
    catalog_version,
    has_side_effect,
    install_domain,
    requested_side_effects,
    served_domain,
)
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
    "ToolSpec",
    "WaitArgs",
    "Waited",
    "catalog_version",
    "has_side_effect",
    "install_domain",
    "money",
    "requested_side_effects",
    "served_domain",
]
