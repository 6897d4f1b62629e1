"""Schemas as OpenAI's strict structured outputs take them, and documents back from them.

In strict mode (`response_format` `json_schema` with `strict: true`, what the engines send
in `json_schema` mode) a schema is a subset of JSON Schema: every object lists all its
properties in `required` and sets `additionalProperties: false`; an optional property is
required and nullable instead; string lengths (`minLength`, `maxLength`) are not among
the supported keywords. `strict_schema` rewrites agentkeel's schemas so (the plan schema
has optional step fields and bounded strings), and `strict_document` undoes the rewrite
on the answer: a null where agentkeel's own schema has no null means "left out". The
document is then checked against the original schema, bounds included
(`engines.constraints`), so nothing the strict form loosened goes unchecked.
"""

from __future__ import annotations

from typing import Any

__all__ = ["DROPPED_KEYWORDS", "strict_document", "strict_schema"]

DROPPED_KEYWORDS = frozenset({"minLength", "maxLength"})
"""Keywords strict mode refuses that agentkeel's schemas use; checked after decoding."""
_NULL = {"type": "null"}


def strict_schema(schema: Any) -> Any:
    """`schema` with every object's properties all required (the optional ones nullable),
    `additionalProperties: false`, a `type` beside every bare `enum`, and no keyword of
    `DROPPED_KEYWORDS`."""
    if isinstance(schema, list):
        return [strict_schema(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    out = {
        key: strict_schema(value) if key not in ("properties", "enum", "const") else value
        for key, value in schema.items()
        if key not in DROPPED_KEYWORDS
    }
    if "enum" in out and "type" not in out:
        kinds = {_json_type(v) for v in out["enum"]}
        out["type"] = kinds.pop() if len(kinds) == 1 else sorted(kinds)
    properties = schema.get("properties")
    if isinstance(properties, dict):
        required = set(schema.get("required", ()))
        out["properties"] = {
            name: strict_schema(sub) if name in required else _nullable(strict_schema(sub))
            for name, sub in properties.items()
        }
        out["required"] = list(properties)
        out["additionalProperties"] = False
    return out


def strict_document(document: Any) -> Any:
    """The answer to a `strict_schema` as the original schema reads it: every key whose
    value is null left out (agentkeel's schemas admit no null, so a null is a property
    the model left out in the only way strict mode lets it)."""
    if isinstance(document, dict):
        return {k: strict_document(v) for k, v in document.items() if v is not None}
    if isinstance(document, list):
        return [strict_document(item) for item in document]
    return document


def _nullable(schema: dict[str, Any]) -> dict[str, Any]:
    return {"anyOf": [schema, _NULL]}


def _json_type(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if value is None:
        return "null"
    return "string"
