"""An MCP tool's JSON Schemas as the pydantic models the catalog knows tools by.

The core checks a plan's arguments and `$ref`s against a tool's `args_model` and
`result_model` (`schemas.plan.arguments`, the scheduler, the plan schema the planner
decodes by). An MCP tool brings JSON Schemas instead (any draft, 2020-12 included), so
each becomes a model with one field per top-level property, typed from the property's
`type` where it names one JSON type, and a check of the whole value against the schema
itself (`jsonschema`, the draft the schema declares) after pydantic's: what pydantic
cannot say (nested shapes, `oneOf`, formats of the draft) is still refused before any
call runs. `model_json_schema()` gives the server's schema back, so the planner's plan
schema, its prompt and the catalog version see exactly what the server declared.
"""

from __future__ import annotations

import copy
from typing import Any, ClassVar

import jsonschema
from pydantic import BaseModel, ConfigDict, Field, create_model, model_validator

__all__ = ["McpArguments", "McpResult", "arguments_model", "result_model"]

_JSON_TYPES: dict[str, Any] = {
    "string": str,
    "integer": int,
    "number": float,
    "boolean": bool,
    "array": list[Any],
    "object": dict[str, Any],
}


def _validator(schema: dict[str, Any]) -> Any:
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    cls.check_schema(schema)
    return cls(schema)


def _first_error(validator: Any, value: Any) -> str | None:
    error = jsonschema.exceptions.best_match(validator.iter_errors(value))
    if error is None:
        return None
    where = ".".join(str(part) for part in error.absolute_path)
    return f"{where}: {error.message}" if where else error.message


class McpArguments(BaseModel):
    """Base of an MCP tool's arguments: unknown ones refused, the whole checked by schema."""

    model_config = ConfigDict(extra="forbid")
    mcp_schema: ClassVar[dict[str, Any]] = {}
    mcp_validator: ClassVar[Any] = None
    mcp_properties: ClassVar[tuple[str, ...]] = ()
    mcp_aliases: ClassVar[dict[str, str]] = {}
    """Field name -> the server's property name, where that is no Python identifier."""

    @model_validator(mode="after")
    def _matches_schema(self) -> McpArguments:
        problem = _first_error(self.mcp_validator, self.mcp_arguments())
        if problem is not None:
            raise ValueError(problem)
        return self

    def mcp_arguments(self) -> dict[str, Any]:
        """The arguments as the server's `tools/call` takes them (only those a plan set)."""
        values = self.model_dump(mode="json", exclude_unset=True, include=set(self.mcp_properties))
        return {self.mcp_aliases.get(name, name): value for name, value in values.items()}

    @classmethod
    def model_json_schema(cls, *args: Any, **kwargs: Any) -> dict[str, Any]:
        return copy.deepcopy(cls.mcp_schema)


class McpResult(BaseModel):
    """Base of an MCP tool's result: `structuredContent`, or the text it answered with."""

    model_config = ConfigDict(extra="allow")
    mcp_schema: ClassVar[dict[str, Any] | None] = None
    mcp_validator: ClassVar[Any] = None

    @classmethod
    def problem(cls, structured: Any) -> str | None:
        """Why `structured` breaks the tool's declared `outputSchema`, or None."""
        if cls.mcp_validator is None:
            return None
        return _first_error(cls.mcp_validator, structured)

    @classmethod
    def model_json_schema(cls, *args: Any, **kwargs: Any) -> dict[str, Any]:
        if cls.mcp_schema is not None:
            return copy.deepcopy(cls.mcp_schema)
        return {"type": "object", "properties": {"text": {"type": "string"}}}


def _annotation(prop: Any) -> Any:
    kind = prop.get("type") if isinstance(prop, dict) else None
    return _JSON_TYPES.get(kind, Any) if isinstance(kind, str) else Any


def _fields(schema: dict[str, Any]) -> tuple[dict[str, Any], dict[str, str]]:
    properties = schema.get("properties") or {}
    required = set(schema.get("required") or ())
    fields: dict[str, Any] = {}
    aliases: dict[str, str] = {}
    for name, prop in properties.items():
        field_name = (
            name if name.isidentifier() and not name.startswith("_") else f"p_{len(fields)}"
        )
        if field_name != name:
            aliases[field_name] = name
        annotation = _annotation(prop)
        if name in required:
            fields[field_name] = (annotation, Field(alias=name) if field_name != name else ...)
        else:
            fields[field_name] = (annotation | None, Field(default=None, alias=name))
    return fields, aliases


def arguments_model(model_name: str, schema: dict[str, Any]) -> type[McpArguments]:
    """The model of a tool whose `inputSchema` is `schema`.

    Raises:
        jsonschema.SchemaError: the server's schema is no valid JSON Schema.
    """
    schema = copy.deepcopy(schema) or {"type": "object"}
    fields, aliases = _fields(schema)
    model: type[McpArguments] = create_model(
        model_name, __base__=McpArguments, __module__=__name__, **fields
    )
    model.mcp_schema = schema
    model.mcp_validator = _validator(schema)
    model.mcp_properties = tuple(fields)
    model.mcp_aliases = aliases
    return model


def result_model(model_name: str, schema: dict[str, Any] | None) -> type[McpResult]:
    """The model of a tool's results: the `outputSchema`'s properties when it declares one
    (so `$s1.field` references are checked), else `text`."""
    if schema is None:
        fields: dict[str, Any] = {"text": (str | None, None)}
    else:
        fields = {
            name: (Any, None)
            for name in (schema.get("properties") or {})
            if name.isidentifier() and not name.startswith("_")
        }
    model: type[McpResult] = create_model(
        model_name, __base__=McpResult, __module__=__name__, **fields
    )
    if schema is not None:
        model.mcp_schema = copy.deepcopy(schema)
        model.mcp_validator = _validator(schema)
    return model
