"""JSON Schema to a GBNF grammar, for servers that constrain output only by a grammar.

llama-cpp-python's server (and llama.cpp's `grammar` field) take GBNF, not JSON Schema. This
covers the part of JSON Schema the plan and label schemas use: objects (required, then
optional properties in order; no others), arrays (`items`, `minItems`, `maxItems`),
strings (`enum`, `const`, `minLength`/`maxLength`, and `pattern` for regular expressions
of literals, classes, groups, alternation and quantifiers), integers, numbers, booleans,
null, type lists, `anyOf`/`oneOf` and local `$ref`s. What it cannot express it leaves
wider than the schema (an integer's range, say): every output is validated afterwards.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from agentkeel.inference.engines.gbnf_pattern import UnsupportedSchema, literal, regex_to_gbnf

__all__ = ["UnsupportedSchema", "choice_grammar", "json_schema_to_gbnf"]

PRIMITIVES = {
    "ws": "[ \\t\\n]{0,20}",
    "char": '[^"\\\\\\x00-\\x1f] | "\\\\" (["\\\\/bfnrt] | "u" [0-9a-fA-F]{4})',
    "string": '"\\"" char* "\\""',
    "integer": '"-"? ("0" | [1-9] [0-9]{0,15})',
    "natural": '"0" | [1-9] [0-9]{0,15}',
    "number": 'integer ("." [0-9]+)? ([eE] [-+]? [0-9]+)?',
    "boolean": '"true" | "false"',
    "null": '"null"',
    "value": "object | array | string | number | boolean | null",
    "object": '"{" ws (string ws ":" ws value (ws "," ws string ws ":" ws value)*)? ws "}"',
    "array": '"[" ws (value (ws "," ws value)*)? ws "]"',
}
MAX_REPEAT = 2000
"""llama.cpp refuses larger repetition counts: a longer bound is left open (and checked
after decoding)."""


COMPACT_WS = '" "?'
"""At most one space between tokens: what a small model given free whitespace lacks. Up
to 20 whitespace characters at every gap let Gemma 3 270M pad a plan with blank lines
until it ran out of tokens (`bench.plans` over llama.cpp's chat API)."""


def json_schema_to_gbnf(schema: dict[str, Any], *, ws: str = PRIMITIVES["ws"]) -> str:
    """A GBNF grammar whose `root` matches JSON documents of `schema` (or wider, see above).
    `ws`: the whitespace allowed between tokens (`COMPACT_WS`: at most one space)."""
    return _Converter(schema).grammar(ws)


class _Converter:
    def __init__(self, schema: dict[str, Any]) -> None:
        self._root = schema
        self._rules: dict[str, str] = {}
        self._names: dict[str, str] = {}  # rule body -> name, to share identical rules
        self._refs: dict[str, str] = {}  # $ref -> its rule

    def grammar(self, ws: str) -> str:
        root = self._visit(self._root, "root")
        lines = [f"root ::= {root}"]
        lines += [f"{name} ::= {body}" for name, body in self._rules.items()]
        primitives = {**PRIMITIVES, "ws": ws}
        lines += [f"{name} ::= {body}" for name, body in primitives.items()]
        return "\n".join(lines) + "\n"

    def _rule(self, hint: str, body: str) -> str:
        """A named rule for `body` (one per distinct body)."""
        if body in self._names:
            return self._names[body]
        name = re.sub(r"[^a-zA-Z0-9-]+", "-", hint).strip("-").lower() or "r"
        base, n = name, 1
        while name in self._rules or name in PRIMITIVES or name == "root":
            n += 1
            name = f"{base}-{n}"
        self._rules[name] = body
        self._names[body] = name
        return name

    def _visit(self, schema: dict[str, Any], hint: str) -> str:
        if "$ref" in schema:
            return self._ref(schema["$ref"])
        if "const" in schema:
            return literal(json.dumps(schema["const"]))
        if "enum" in schema:
            if not schema["enum"]:
                raise UnsupportedSchema(f"an empty enum at {hint}")
            return "(" + " | ".join(literal(json.dumps(v)) for v in schema["enum"]) + ")"
        for key in ("anyOf", "oneOf"):
            if key in schema:
                options = [self._visit(s, f"{hint}-{i}") for i, s in enumerate(schema[key])]
                return self._rule(hint, " | ".join(options))
        kind = schema.get("type")
        if isinstance(kind, list):
            options = [self._visit({**schema, "type": k}, f"{hint}-{k}") for k in kind]
            return self._rule(hint, " | ".join(options))
        if kind == "object" or "properties" in schema:
            return self._object(schema, hint)
        if kind == "array":
            return self._array(schema, hint)
        if kind == "string":
            return self._string(schema, hint)
        if kind == "integer":
            low = schema.get("minimum")
            return "natural" if low is not None and low >= 0 else "integer"
        if kind in ("number", "boolean", "null"):
            return str(kind)
        if "allOf" in schema:
            raise UnsupportedSchema(f"allOf at {hint}")
        if kind is None:
            return "value"
        raise UnsupportedSchema(f"type {kind!r} at {hint}")

    def _ref(self, ref: str) -> str:
        if ref != "#" and not ref.startswith("#/"):
            raise UnsupportedSchema(f"only local $refs: {ref}")
        if ref in self._refs:
            return self._refs[ref]
        target: Any = self._root
        for part in ref[2:].split("/") if ref != "#" else []:
            target = target[part.replace("~1", "/").replace("~0", "~")]
        base = "ref-" + re.sub(r"[^a-zA-Z0-9-]+", "-", ref[2:]).strip("-").lower()
        name, n = base or "ref-root", 1
        while name in self._rules or name in PRIMITIVES:
            n += 1
            name = f"{base}-{n}"
        self._refs[ref] = name
        self._rules[name] = ""  # reserved first: a schema may refer to itself
        self._rules[name] = self._visit(target, name)
        return name

    def _object(self, schema: dict[str, Any], hint: str) -> str:
        properties: dict[str, Any] = schema.get("properties", {})
        missing = [k for k in schema.get("required", []) if k not in properties]
        if missing:
            raise UnsupportedSchema(f"required {missing} without a schema at {hint}")
        if isinstance(schema.get("additionalProperties"), dict):
            raise UnsupportedSchema(f"additionalProperties with a schema at {hint}")
        if not properties and schema.get("additionalProperties", True) is not False:
            return "object"  # any object
        required = [k for k in properties if k in schema.get("required", [])]
        optional = [k for k in properties if k not in required]
        pair = {
            key: f'{literal(json.dumps(key))} ws ":" ws {self._visit(sub, f"{hint}-{key}")}'
            for key, sub in properties.items()
        }
        body = ' ws "," ws '.join(pair[k] for k in required)
        chain = self._optional_chain([pair[k] for k in optional], f"{hint}-opt")
        if chain and body:
            body += f' (ws "," ws {chain})?'
        elif chain:
            body = f"({chain})?"
        return self._rule(hint, f'"{{" ws {body} ws "}}"' if body else '"{" ws "}"')

    def _optional_chain(self, pairs: list[str], hint: str) -> str:
        """A rule matching a non-empty, ordered subset of `pairs`, comma-separated."""
        if not pairs:
            return ""
        rest = self._optional_chain(pairs[1:], hint)
        if not rest:
            return self._rule(f"{hint}-{len(pairs)}", pairs[0])
        body = f'{pairs[0]} (ws "," ws {rest})? | {rest}'
        return self._rule(f"{hint}-{len(pairs)}", body)

    def _array(self, schema: dict[str, Any], hint: str) -> str:
        low = int(schema.get("minItems", 0))
        high = None if schema.get("maxItems") is None else int(schema["maxItems"])
        if high is not None and high < low:
            raise UnsupportedSchema(f"maxItems below minItems at {hint}")
        if high == 0:
            return '"[" ws "]"'
        item = self._visit(schema.get("items", {}), f"{hint}-item")
        more = f'(ws "," ws {item})' + _repeat(max(low - 1, 0), None if high is None else high - 1)
        items = f"{item} {more}"
        body = f'"[" ws ({items})? ws "]"' if low == 0 else f'"[" ws {items} ws "]"'
        return self._rule(hint, body)

    def _string(self, schema: dict[str, Any], hint: str) -> str:
        if "pattern" in schema:
            inner = regex_to_gbnf(schema["pattern"])
            return self._rule(hint, f'"\\"" {inner} "\\""')
        low = int(schema.get("minLength", 0))
        high = None if schema.get("maxLength") is None else int(schema["maxLength"])
        if high is not None and high < low:
            raise UnsupportedSchema(f"maxLength below minLength at {hint}")
        if not low and high is None:
            return "string"
        return self._rule(hint, f'"\\"" char{_repeat(low, high)} "\\""')


def choice_grammar(choices: Sequence[str]) -> str:
    """A GBNF grammar whose only sentences are `choices`, exactly."""
    return "root ::= " + " | ".join(literal(choice) for choice in choices)


def _repeat(low: int, high: int | None) -> str:
    if low > MAX_REPEAT:
        raise UnsupportedSchema(f"a repetition of at least {low}")
    if high is not None and high > MAX_REPEAT:
        high = None
    if high is None:
        return "*" if low == 0 else f"{{{low},}}"
    return f"{{{low},{high}}}"
