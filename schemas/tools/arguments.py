"""The bounds every tool call's arguments keep, whatever the tool's own model declares.

A tool's model says what its arguments mean; these say what no argument may be, because
of where arguments go: Postgres rejects NUL in text and integers past int64, and such a
driver error is retryable, so a hostile value would be retried and, in a merged request,
fail every other call sent with it. Checked before any call (`activities.tools.arguments`)
like the request's own fields are (`schemas.text`), so a bad call fails its own step, at
once and for good, as `InvalidArguments`.
"""

from __future__ import annotations

import math
import re
from typing import Any

__all__ = [
    "MAX_ARGUMENT_DEPTH",
    "MAX_ARGUMENT_ITEMS",
    "MAX_ARGUMENT_TEXT_CHARS",
    "argument_problem",
]

MAX_ARGUMENT_TEXT_CHARS = 20_000
"""Longest string argument: five times the longest question, far below Temporal's 2 MB
payload limit (a tool that needs more takes a reference to it)."""
MAX_ARGUMENT_ITEMS = 1_000
"""Most elements of a list or entries of an object argument."""
MAX_ARGUMENT_DEPTH = 8
"""Deepest nesting of lists and objects."""
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1

_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ud800-\udfff]")
"""C0 controls and DEL, except tab, newline and carriage return (free text has lines), and
lone surrogates: the same rule as `schemas.text.FreeText`."""


def argument_problem(value: Any, path: str = "", depth: int = 0) -> str | None:
    """What is wrong with the JSON value `value` as a tool argument, naming where; None: ok.

    Args:
        value: Decoded JSON: objects, lists, strings, numbers, booleans, null.
        path: Where `value` is, for the message (`items[2].sku`).
        depth: How deep `value` is nested.
    """
    where = path or "arguments"
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int):
        if not INT64_MIN <= value <= INT64_MAX:
            return f"{where}: {_short(value)} is outside the 64-bit integer range"
        return None
    if isinstance(value, float):
        return None if math.isfinite(value) else f"{where}: {value} is not a finite number"
    if isinstance(value, str):
        return _text_problem(value, where)
    if isinstance(value, (list, tuple, dict)):
        if depth >= MAX_ARGUMENT_DEPTH:
            return f"{where}: nested deeper than {MAX_ARGUMENT_DEPTH} levels"
        if len(value) > MAX_ARGUMENT_ITEMS:
            return f"{where}: {len(value)} items, more than {MAX_ARGUMENT_ITEMS}"
        if isinstance(value, dict):
            for key, item in value.items():
                if not isinstance(key, str):
                    return f"{where}: a key that is not text ({_short(key)})"
                problem = _text_problem(key, f"{where} key") or argument_problem(
                    item, f"{path}.{key}" if path else key, depth + 1
                )
                if problem is not None:
                    return problem
            return None
        for index, item in enumerate(value):
            problem = argument_problem(item, f"{where}[{index}]", depth + 1)
            if problem is not None:
                return problem
        return None
    return f"{where}: a {type(value).__name__} is not a JSON value"


def _text_problem(text: str, where: str) -> str | None:
    if len(text) > MAX_ARGUMENT_TEXT_CHARS:
        return f"{where}: {len(text)} characters, more than {MAX_ARGUMENT_TEXT_CHARS}"
    found = _CONTROL.search(text)
    if found is not None:
        return (
            f"{where}: contains the {_kind(found.group())} U+{ord(found.group()):04X} "
            f"at {found.start()}"
        )
    return None


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:39] + "…"


def _kind(character: str) -> str:
    return "lone surrogate" if 0xD800 <= ord(character) <= 0xDFFF else "control character"
