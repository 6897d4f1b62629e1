"""How an MCP tool becomes a catalog entry: annotations to policy, schemas to models, the
catalog version. No server runs here: the tools are `mcp.types.Tool` values as listed."""

from __future__ import annotations

from typing import Any

import mcp.types as types
import pytest
from pydantic import ValidationError

from agentkeel.activities.mcp.connection import McpConnection
from agentkeel.activities.mcp.specs import mcp_downstream, tool_specs
from agentkeel.inference.llm.plan_schema import step_schema
from agentkeel.schemas.tools import catalog
from agentkeel.sdk.decorator import ToolDefinitionError
from agentkeel.sdk.domain import Domain
from agentkeel.sdk.mcp import McpServer, McpToolPolicy, mcp_tool_name, parse_mcp_servers
from agentkeel.settings.mcp_assembly import joined_intents
from agentkeel.settings.model import SettingsError

SCHEMA = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "properties": {
        "city": {"type": "string", "minLength": 2},
        "days": {"type": "integer", "minimum": 1, "maximum": 7},
        "units": {"oneOf": [{"const": "metric"}, {"const": "imperial"}]},
    },
    "required": ["city"],
    "additionalProperties": False,
}


def _tool(name: str, **hints: Any) -> types.Tool:
    return types.Tool(
        name=name,
        description=f"The {name} tool.",
        input_schema=SCHEMA,
        annotations=types.ToolAnnotations(**hints) if hints else None,
    )


def _specs(server: McpServer, *tools: types.Tool) -> dict[str, Any]:
    connection = McpConnection(server)
    return {s.name: s for s in tool_specs(connection, tools, mcp_downstream(server))}


def test_annotations_map_to_policy_and_configuration_wins() -> None:
    tools = (
        _tool("forecast", readOnlyHint=True, idempotentHint=True),
        _tool("now", readOnlyHint=True),
        _tool("book", destructiveHint=True),
        _tool("note"),  # no hints: a side effect
        _tool("ping", readOnlyHint=False, idempotentHint=True),
    )
    plain = _specs(McpServer(name="w", command="x"), *tools)
    assert plain["w_forecast"].idempotent and plain["w_forecast"].cache_ttl is None
    assert plain["w_now"].idempotent and plain["w_now"].cache_ttl is None
    for effect in ("w_book", "w_note", "w_ping"):
        assert not plain[effect].idempotent and not plain[effect].needs_approval
        assert "idempotency_key" in plain[effect].activity_input_model.model_fields
    cached = _specs(
        McpServer(
            name="w",
            command="x",
            cache_ttl_s=30,
            approval=True,
            tools={"note": McpToolPolicy(side_effect=False), "book": McpToolPolicy(retries=1)},
        ),
        *tools,
    )
    assert cached["w_forecast"].cache_ttl is not None
    assert cached["w_forecast"].cache_ttl.total_seconds() == 30
    assert cached["w_now"].cache_ttl is None, "read-only but not idempotent: never cached"
    assert cached["w_book"].needs_approval and cached["w_book"].max_attempts == 1
    assert cached["w_note"].idempotent, "the operator said it is a read"


def test_the_servers_schema_checks_arguments_and_reaches_the_plan_schema() -> None:
    spec = _specs(McpServer(name="w", command="x"), _tool("forecast", readOnlyHint=True))[
        "w_forecast"
    ]
    assert spec.args_model.model_validate({"city": "Oslo", "days": 3}).mcp_arguments() == {
        "city": "Oslo",
        "days": 3,
    }
    for bad in ({"city": "O"}, {"city": "Oslo", "units": "kelvin"}, {"days": 2}, {"x": 1}):
        with pytest.raises(ValidationError):
            spec.args_model.model_validate(bad)
    args = step_schema(spec)["properties"][spec.name]
    assert set(args["properties"]) == {"city", "days", "units"} and args["required"] == ["city"]
    assert spec.description == "The forecast tool."


def test_a_changed_tool_list_changes_the_catalog_version() -> None:
    server = McpServer(name="w", command="x")
    one = _specs(server, _tool("forecast", readOnlyHint=True))
    two = _specs(server, _tool("forecast", readOnlyHint=True), _tool("book"))

    def version(specs: dict[str, Any]) -> str:
        domain = Domain(
            name="d",
            tools=tuple(specs.values()),
            persona="p",
            downstreams=(mcp_downstream(server),),
        )
        return catalog._digest(domain, {s.name: s for s in domain.tools})

    assert version(one) != version(two)
    assert version(one) == version(_specs(server, _tool("forecast", readOnlyHint=True)))


def test_configuration_is_checked() -> None:
    with pytest.raises(ValueError, match="exactly one of command or url"):
        McpServer(name="w")
    with pytest.raises(ValueError, match=r"MCP servers: 0\.url"):
        parse_mcp_servers('[{"name": "w", "url": "ftp://x"}]')
    assert parse_mcp_servers('[{"name": "w", "url": "http://h/mcp"}]')[0].transport == "http"
    assert mcp_tool_name(McpServer(name="ev", command="x"), "get-Sum") == "ev_get_sum"
    reserved = types.Tool(name="t", input_schema={"type": "object", "properties": {"tenant": {}}})
    with pytest.raises(ToolDefinitionError, match="tenant"):
        _specs(McpServer(name="w", command="x"), reserved)


def test_configured_intents_join_the_domains_declared_ones() -> None:
    server = McpServer(
        name="w",
        command="x",
        intents=("weather",),
        tools={"book": McpToolPolicy(intents=("trips", "weather"))},
    )
    assert server.intents_of("book") == ("weather", "trips")
    assert server.intents_of("forecast") == ("weather",)
    specs = _specs(server, _tool("forecast", readOnlyHint=True), _tool("book"))
    configured = {"weather": ["w_forecast", "w_book"], "trips": ["w_book"]}
    declared = Domain(name="d", tools=(), persona="p", intents={"weather": (), "trips": ()})
    joined = joined_intents(declared, list(specs.values()), configured)
    assert joined == {"weather": ("w_forecast", "w_book"), "trips": ("w_book",)}
    with pytest.raises(SettingsError, match=r"\['trips'\].*not declare"):
        joined_intents(
            Domain(name="d", tools=(), persona="p", intents={"weather": ()}),
            list(specs.values()),
            configured,
        )
    # A domain without intents keeps each tool's own, and gets the configured beside them.
    bare = Domain(name="d", tools=(), persona="p")
    open_intents = joined_intents(bare, list(specs.values()), {"trips": ["w_book"]})
    assert open_intents == {
        "w_forecast": ("w_forecast",),
        "w_book": ("w_book",),
        "trips": ("w_book",),
    }
    assert joined_intents(bare, list(specs.values()), {}) == {}
