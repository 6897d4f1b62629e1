"""How an answer says an MCP tool's result in words: its default `render`.

A native tool brings its own `render`; an MCP tool's results are the server's, so the
answer puts them in words generically: structured content (or text that is JSON) as
`key: value` pairs, plain text as it is. Never a Python repr.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["mcp_render", "readable"]

MAX_CHARS = 2000
"""An answer quotes at most this much of one result (the rest is cut with `…`)."""


def readable(value: Any) -> str:
    """`value` in words: a mapping as `key: value; ...`, a list as `a, b`, a scalar as is."""
    if isinstance(value, dict):
        return "; ".join(f"{k}: {_nested(v)}" for k, v in value.items())
    if isinstance(value, list):
        return ", ".join(_nested(v) for v in value)
    if isinstance(value, bool):
        return "yes" if value else "no"
    if value is None:
        return "none"
    return str(value)


def _nested(value: Any) -> str:
    return f"({readable(value)})" if isinstance(value, dict | list) and value else readable(value)


def mcp_render(tool: str, output: dict[str, Any]) -> str:
    """One result of MCP tool `tool` (catalog name) in words, for the model-free answer."""
    content: Any = output
    if set(output) == {"text"} and isinstance(output["text"], str):
        text = output["text"].strip()
        try:
            content = json.loads(text)
        except ValueError:
            content = text
    said = readable(content)
    if len(said) > MAX_CHARS:
        said = said[: MAX_CHARS - 1] + "…"
    return f"{tool}: {said}" + ("" if said.endswith((".", "!", "?", "…")) else ".")
