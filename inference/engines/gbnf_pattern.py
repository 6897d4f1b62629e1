"""Regular expressions of JSON Schema `pattern`s as GBNF, and GBNF string literals.

Only what translates faithfully: a pattern is matched against a JSON string's content, so a
character JSON would escape, a negated class or a lazy quantifier is refused
(`UnsupportedSchema`) rather than let through a grammar that admits invalid JSON.
"""

from __future__ import annotations

import re


class UnsupportedSchema(ValueError):
    """A schema construct this converter cannot express."""


def literal(text: str) -> str:
    """`text` as a GBNF string literal: quotes and backslashes escaped, control characters
    as `\\xHH` (a raw NUL would end the grammar early)."""
    escaped = "".join(
        {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\r": "\\r", "\t": "\\t"}.get(c)
        or (f"\\x{ord(c):02x}" if ord(c) < 0x20 or ord(c) == 0x7F else c)
        for c in text
    )
    return f'"{escaped}"'


_QUANTIFIER = re.compile(r"\*|\+|\?|\{\d+(,\d*)?\}")
_SAFE = frozenset(
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 _-.,:;@#%&=+/!?'<>~*()|$^{}[]"
)
"""Characters a pattern may hold literally: printable, and none that JSON escapes."""
_ESCAPED_LITERALS = frozenset(".$-()[]{}*+?|/^,:@#%&=!~")
_CLASS_ESCAPES = {"d": "0-9", "w": "A-Za-z0-9_"}


def regex_to_gbnf(pattern: str) -> str:
    """A regular expression of literals, escapes, classes, groups, `|` and greedy
    quantifiers as a GBNF expression over a JSON string's content. Unanchored ends may hold
    anything, as in JSON Schema; what it cannot translate faithfully is refused."""
    text = pattern
    anchored_start = text.startswith("^")
    text = text[1:] if anchored_start else text
    anchored_end = text.endswith("$") and not _escaped_at(text, len(text) - 1)
    text = text[:-1] if anchored_end else text
    parsed, end = _sequence(text, 0)
    if end != len(text):
        raise UnsupportedSchema(f"pattern {pattern!r}: unexpected {text[end]!r} at {end}")
    return " ".join(
        part
        for part in (
            "" if anchored_start else "char*",
            f"({parsed})",
            "" if anchored_end else "char*",
        )
        if part
    )


def _escaped_at(text: str, i: int) -> bool:
    slashes = 0
    while i - 1 - slashes >= 0 and text[i - 1 - slashes] == "\\":
        slashes += 1
    return slashes % 2 == 1


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
            atom, i = _char_class(text, i)
        elif c == "\\":
            if i + 1 >= len(text):
                raise UnsupportedSchema(f"pattern {text!r}: a trailing backslash")
            atom, i = _escape(text[i + 1], text), i + 2
        elif c == ".":
            atom, i = "char", i + 1
        elif c in "^$" or c not in _SAFE:
            raise UnsupportedSchema(f"pattern {text!r}: {c!r} at {i}")
        else:
            atom, i = literal(c), i + 1
        quantifier = _QUANTIFIER.match(text, i)
        if quantifier:
            atom += quantifier.group()
            i = quantifier.end()
            if i < len(text) and text[i] in "?+":
                raise UnsupportedSchema(f"pattern {text!r}: a lazy or possessive quantifier")
        alternatives[-1].append(atom)
    return " | ".join(" ".join(a) if a else '""' for a in alternatives), i


def _char_class(text: str, i: int) -> tuple[str, int]:
    """`[...]` of safe characters, ranges and `\\d`/`\\w`; negation and anything JSON would
    escape are refused (a class is copied into the grammar)."""
    j, parts = i + 1, []
    if j < len(text) and text[j] in "^]":
        raise UnsupportedSchema(f"pattern {text!r}: a negated or ]-first class")
    while j < len(text) and text[j] != "]":
        c = text[j]
        if c == "\\" and j + 1 < len(text):
            e = text[j + 1]
            if e in _CLASS_ESCAPES:
                parts.append(_CLASS_ESCAPES[e])
            elif e in ".-":
                parts.append("\\-" if e == "-" else e)
            else:
                raise UnsupportedSchema(f"pattern {text!r}: escape \\{e} in a class")
            j += 2
            continue
        if c not in _SAFE or c in "[":
            raise UnsupportedSchema(f"pattern {text!r}: {c!r} in a class")
        parts.append(c)
        j += 1
    if j >= len(text):
        raise UnsupportedSchema(f"pattern {text!r}: unclosed class")
    return "[" + "".join(parts) + "]", j + 1


def _escape(c: str, text: str) -> str:
    if c in _CLASS_ESCAPES:
        return f"[{_CLASS_ESCAPES[c]}]"
    if c in _ESCAPED_LITERALS:
        return literal(c)
    raise UnsupportedSchema(f"pattern {text!r}: escape \\{c}")
