"""A checker of OpenAI's documented rules for strict structured outputs.

From OpenAI's Structured Outputs guide, "Supported schemas" (`response_format` of type
`json_schema` with `strict: true`):

- supported types: string, number, boolean, integer, object, array, enum, anyOf (and
  null, as one of a union's types or an anyOf branch, for nullable fields);
- supported keywords beyond those: strings `pattern` and `format` (date-time, time,
  date, duration, email, hostname, ipv4, ipv6, uuid); numbers `multipleOf`, `maximum`,
  `exclusiveMaximum`, `minimum`, `exclusiveMinimum`; arrays `minItems`, `maxItems`;
  `const`; `$defs` with `$ref` (recursion included); `description` (and `title`);
- the root must be an object, not `anyOf`;
- all fields must be required (optional ones are nullable instead), and
  `additionalProperties: false` must be set on every object;
- limits: at most 5000 object properties in all and 10 levels of nesting; at most 1000
  enum values in all; the property names, definition names, enum and const values at
  most 120,000 characters together; one enum of more than 250 values at most 15,000
  characters (a level: an object's properties, counted from the root's);
- not supported (among others): `allOf`, `not`, `if`/`then`/`else`,
  `dependentRequired`, `dependentSchemas`, `patternProperties`, and string lengths
  (`minLength`, `maxLength`).

`strict_problems` answers every rule a schema breaks, as readable lines (none: accepted).
"""

from __future__ import annotations

from typing import Any

__all__ = ["strict_problems"]

TYPES = frozenset({"string", "number", "boolean", "integer", "object", "array", "null"})
FORMATS = frozenset(
    {"date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"}
)
ANNOTATIONS = frozenset({"description", "title"})
NUMERIC = frozenset({"multipleOf", "maximum", "exclusiveMaximum", "minimum", "exclusiveMinimum"})
KEYWORDS: dict[str, frozenset[str]] = {
    "string": frozenset({"pattern", "format"}),
    "number": NUMERIC,
    "integer": NUMERIC,
    "array": frozenset({"items", "minItems", "maxItems"}),
    "object": frozenset({"properties", "required", "additionalProperties"}),
    "boolean": frozenset(),
    "null": frozenset(),
}
GENERAL = frozenset({"type", "enum", "const", "anyOf", "$ref", "$defs"}) | ANNOTATIONS
MAX_PROPERTIES = 5000
MAX_DEPTH = 10
MAX_ENUM_VALUES = 1000
MAX_NAME_CHARS = 120_000
LARGE_ENUM = 250
MAX_LARGE_ENUM_CHARS = 15_000


class _Tally:
    def __init__(self) -> None:
        self.properties = 0
        self.enum_values = 0
        self.chars = 0
        self.problems: list[str] = []


def strict_problems(schema: dict[str, Any]) -> list[str]:
    """Every rule of strict structured outputs `schema` breaks; [] when it is accepted."""
    tally = _Tally()
    if schema.get("type") != "object" or "anyOf" in schema:
        tally.problems.append("(root): must be an object, not anyOf")
    for name, definition in schema.get("$defs", {}).items():
        tally.chars += len(name)
        _node(definition, f"$defs/{name}", 1, tally)
    _node({k: v for k, v in schema.items() if k != "$defs"}, "(root)", 1, tally)
    if tally.properties > MAX_PROPERTIES:
        tally.problems.append(f"{tally.properties} properties: more than {MAX_PROPERTIES}")
    if tally.enum_values > MAX_ENUM_VALUES:
        tally.problems.append(f"{tally.enum_values} enum values: more than {MAX_ENUM_VALUES}")
    if tally.chars > MAX_NAME_CHARS:
        tally.problems.append(f"names and values of {tally.chars} characters")
    return tally.problems


def _node(node: Any, at: str, depth: int, tally: _Tally) -> None:
    if not isinstance(node, dict):
        tally.problems.append(f"{at}: not a schema")
        return
    if depth > MAX_DEPTH:
        tally.problems.append(f"{at}: nested deeper than {MAX_DEPTH} levels")
    kinds = _types(node, at, tally)
    allowed = GENERAL.union(*(KEYWORDS[k] for k in kinds if k in KEYWORDS))
    for key in node:
        if key not in allowed:
            tally.problems.append(f"{at}: keyword {key!r} is not supported here")
    if not kinds and not ({"anyOf", "$ref", "enum", "const"} & set(node)):
        tally.problems.append(f"{at}: no type")
    if "format" in node and node["format"] not in FORMATS:
        tally.problems.append(f"{at}: format {node['format']!r} is not supported")
    _enum(node, at, tally)
    for i, branch in enumerate(node.get("anyOf", ())):
        _node(branch, f"{at}/anyOf/{i}", depth, tally)
    if "items" in node:
        _node(node["items"], f"{at}/items", depth, tally)
    if "object" in kinds or "properties" in node:
        _object(node, at, depth, tally)


def _types(node: dict[str, Any], at: str, tally: _Tally) -> set[str]:
    declared = node.get("type")
    kinds = set(declared) if isinstance(declared, list) else {declared} if declared else set()
    for kind in kinds - TYPES:
        tally.problems.append(f"{at}: type {kind!r} is not supported")
    return kinds & TYPES


def _enum(node: dict[str, Any], at: str, tally: _Tally) -> None:
    values = node.get("enum")
    if values is None:
        if "const" in node:
            tally.chars += len(str(node["const"]))
        return
    tally.enum_values += len(values)
    chars = sum(len(str(v)) for v in values)
    tally.chars += chars
    if len(values) > LARGE_ENUM and chars > MAX_LARGE_ENUM_CHARS:
        tally.problems.append(f"{at}: an enum of {len(values)} values and {chars} characters")


def _object(node: dict[str, Any], at: str, depth: int, tally: _Tally) -> None:
    properties = node.get("properties", {})
    if node.get("additionalProperties") is not False:
        tally.problems.append(f"{at}: additionalProperties must be false")
    missing = [name for name in properties if name not in node.get("required", ())]
    if missing:
        tally.problems.append(f"{at}: properties not required: {missing}")
    tally.properties += len(properties)
    for name, sub in properties.items():
        tally.chars += len(name)
        _node(sub, f"{at}/{name}", depth + 1, tally)
