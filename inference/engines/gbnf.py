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

PRIMITIVES = {
    "ws": "[ \\t\\n]{0,20}",
    "char": '[^"\\\\\\x00-\\x1f] | "\\\\" (["\\\\/bfnrt] | "u" [0-9a-fA-F]{4})',
    "string": '"\\"" char* "\\""',
    "integer": '"-"? ("0" | [1-9] [0-9]{0,15})',
    "natural": '"0" | [1-9] [0-9]{0,15}',
    "number": 'integer ("." [0-9]+)? ([eE] [-+]? [0-9]+)?',
    "boolean": '"true" | "false"',
    "null": '"null"',
}


class UnsupportedSchema(ValueError):
    """A schema construct this converter cannot express."""


def json_schema_to_gbnf(schema: dict[str, Any]) -> str:
    """A GBNF grammar whose `root` matches JSON documents of `schema` (or wider, see above)."""
    return _Converter(schema).grammar()


class _Converter:
    def __init__(self, schema: dict[str, Any]) -> None:
        self._root = schema
        self._rules: dict[str, str] = {}
        self._names: dict[str, str] = {}  # rule body -> name, to share identical rules

    def grammar(self) -> str:
        root = self._visit(self._root, "root")
        lines = [f"root ::= {root}"]
        lines += [f"{name} ::= {body}" for name, body in self._rules.items()]
        lines += [f"{name} ::= {body}" for name, body in PRIMITIVES.items()]
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
            return _literal(json.dumps(schema["const"]))
        if "enum" in schema:
            return "(" + " | ".join(_literal(json.dumps(v)) for v in schema["enum"]) + ")"
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
        if kind is None:
            return self._rule("any", "string | number | boolean | null")
        raise UnsupportedSchema(f"type {kind!r} at {hint}")

    def _ref(self, ref: str) -> str:
        if not ref.startswith("#/"):
            raise UnsupportedSchema(f"only local $refs: {ref}")
        target: Any = self._root
        for part in ref[2:].split("/"):
            target = target[part]
        name = "ref-" + ref.rsplit("/", 1)[-1]
        safe = re.sub(r"[^a-zA-Z0-9-]+", "-", name).lower()
        if safe not in self._rules:
            self._rules[safe] = ""  # reserved first: a schema may refer to itself
            self._rules[safe] = self._visit(target, safe)
        return safe

    def _object(self, schema: dict[str, Any], hint: str) -> str:
        properties: dict[str, Any] = schema.get("properties", {})
        required = [k for k in properties if k in schema.get("required", [])]
        optional = [k for k in properties if k not in required]
        pair = {
            key: f'{_literal(json.dumps(key))} ws ":" ws {self._visit(sub, f"{hint}-{key}")}'
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
        item = self._visit(schema.get("items", {}), f"{hint}-item")
        low = int(schema.get("minItems", 0))
        high = schema.get("maxItems")
        more = f'(ws "," ws {item})' + _repeat(max(low - 1, 0), None if high is None else high - 1)
        items = f"{item} {more}"
        body = f'"[" ws ({items})? ws "]"' if low == 0 else f'"[" ws {items} ws "]"'
        return self._rule(hint, body)

    def _string(self, schema: dict[str, Any], hint: str) -> str:
        if "pattern" in schema:
            inner = _regex_to_gbnf(schema["pattern"])
            return self._rule(hint, f'"\\"" {inner} "\\""')
        low, high = schema.get("minLength", 0), schema.get("maxLength")
        if not low and high is None:
            return "string"
        return self._rule(hint, f'"\\"" char{_repeat(low, high)} "\\""')


def choice_grammar(choices: Sequence[str]) -> str:
    """A GBNF grammar whose only sentences are `choices`, exactly."""
    return "root ::= " + " | ".join(_literal(choice) for choice in choices)


def _repeat(low: int, high: int | None) -> str:
    if high is None:
        return "*" if low == 0 else f"{{{low},}}"
    return f"{{{low},{high}}}"


def _literal(text: str) -> str:
    """`text` as a GBNF string literal: quotes and backslashes escaped, control characters
    as `\\xHH` (a raw NUL would end the grammar early)."""
    escaped = "".join(
        {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\r": "\\r", "\t": "\\t"}.get(c)
        or (f"\\x{ord(c):02x}" if ord(c) < 0x20 or ord(c) == 0x7F else c)
        for c in text
    )
    return f'"{escaped}"'


_QUANTIFIER = re.compile(r"\*|\+|\?|\{\d+(,\d*)?\}")


def _regex_to_gbnf(pattern: str) -> str:
    """A regular expression (anchored, of literals, escapes, classes, groups, `|` and
    quantifiers) as a GBNF expression over the characters of a JSON string's content."""
    text = pattern.removeprefix("^").removesuffix("$")
    parsed, end = _sequence(text, 0)
    if end != len(text):
        raise UnsupportedSchema(f"pattern {pattern!r}: unexpected {text[end]!r} at {end}")
    return f"({parsed})"


def _sequence(text: str, i: int) -> tuple[str, int]:
    alternatives: list[list[str]] = [[]]
    while i < len(text) and text[i] != ")":
        c = text[i]
        if c == "|":
            alternatives.append([])
            i += 1
            continue
        if c == "(":
            inner, i = _sequence(text, i + 1 + (2 if text.startswith("?:", i + 1) else 0))
            if i >= len(text) or text[i] != ")":
                raise UnsupportedSchema(f"pattern {text!r}: unclosed group")
            atom, i = f"({inner})", i + 1
        elif c == "[":
            close = text.index("]", i + 1)
            atom, i = text[i : close + 1], close + 1
        elif c == "\\":
            atom, i = _escape(text[i + 1]), i + 2
        elif c == ".":
            atom, i = '[^"\\\\\\x00-\\x1f]', i + 1
        elif c in "^$":
            raise UnsupportedSchema(f"pattern {text!r}: anchor inside")
        else:
            atom, i = _literal(c), i + 1
        quantifier = _QUANTIFIER.match(text, i)
        if quantifier:
            atom += quantifier.group()
            i = quantifier.end()
        alternatives[-1].append(atom)
    return " | ".join(" ".join(a) if a else '""' for a in alternatives), i


def _escape(c: str) -> str:
    classes = {"d": "[0-9]", "w": "[A-Za-z0-9_]", "s": "[ \\t]"}
    return classes.get(c) or _literal(c)
