"""The request fields that constrain a completion, per structured-output mode (see
`openai_compat`): vLLM's, llama.cpp's, a GBNF grammar, or OpenAI's `response_format`.
Both APIs take the same fields but for llama.cpp's JSON schema (see `structured_body`)."""

from __future__ import annotations

import functools
import json
from typing import Any

import structlog

from agentkeel.inference.engines.gbnf import (
    COMPACT_WS,
    UnsupportedSchema,
    choice_grammar,
    json_schema_to_gbnf,
)
from agentkeel.inference.engines.protocol import ChoiceConstraint, Constraint
from agentkeel.inference.engines.strict_schema import strict_schema

log = structlog.get_logger(__name__)

GUIDANCE_WHITESPACE = " ?"
"""At most one space where JSON allows whitespace, for vLLM's guidance backend (the one it
uses for schemas xgrammar cannot take whole, such as the plan schema)."""


CHOICE_KEY = "choice"


def choice_schema(choices: list[str]) -> dict[str, Any]:
    """A choice as OpenAI's strict structured outputs take it: the root of a strict schema
    must be an object with every property required and no other allowed, so the label is
    the one property of one (`{"choice": "refund"}`), never a bare string enum."""
    return {
        "type": "object",
        "properties": {CHOICE_KEY: {"type": "string", "enum": list(choices)}},
        "required": [CHOICE_KEY],
        "additionalProperties": False,
    }


def bounded_whitespace(schema: dict[str, Any]) -> dict[str, Any]:
    """`schema` with llguidance's `x-guidance` whitespace option: as `COMPACT_WS` does for
    llama.cpp. vLLM's default lets a small model pad a plan with newlines and indentation
    until its budget runs out (Gemma 3 270M: 24 lines, unterminated at 256 tokens);
    no whitespace at all (`disable_any_whitespace`) took it off the spacing it knows, into
    a loop of repeated steps. One optional space keeps its own spacing and ends the plan
    (`bench.plans`, `tests/fleet/test_engines.py`). Other backends ignore the extension key."""
    return {**schema, "x-guidance": {"whitespace_pattern": GUIDANCE_WHITESPACE}}


def structured_body(
    constraint: Constraint | None, mode: str, *, chat: bool = False
) -> dict[str, Any]:
    """The body fields that constrain `constraint` in `mode`, for the chat or completions API."""
    if constraint is None or mode == "none":
        return {}
    if isinstance(constraint, ChoiceConstraint):
        if mode == "vllm":
            return {"structured_outputs": {"choice": list(constraint.choices)}}
        if mode in ("llamacpp", "gbnf"):
            return {"grammar": choice_grammar(constraint.choices)}
        if mode == "json_schema":  # `{"choice": ...}`; `openai_output.parse_output` unwraps it
            return {"response_format": _json_schema_format(choice_schema(constraint.choices))}
        return {}
    if mode == "vllm":
        return {"structured_outputs": {"json": bounded_whitespace(constraint.json_schema)}}
    if mode == "llamacpp":
        # Our grammar with at most one space between tokens: the server's own conversion of
        # a schema allows runs of whitespace, which a small model pads past its token budget.
        grammar = _grammar_of(json.dumps(constraint.json_schema), compact=True)
        if grammar is not None:
            return {"grammar": grammar}
        # llama.cpp's chat endpoint reads OpenAI's form; its completions endpoint its own field.
        if chat:
            return {"response_format": _json_schema_format(constraint.json_schema)}
        return {"json_schema": constraint.json_schema}
    if mode == "gbnf":
        # Not key-sorted: the order of properties is the order the grammar asks them in.
        grammar = _grammar_of(json.dumps(constraint.json_schema))
        return {} if grammar is None else {"grammar": grammar}
    if mode == "json_schema":  # strict: `openai_output.parse_output` reads it back
        return {"response_format": _json_schema_format(strict_schema(constraint.json_schema))}
    return {"response_format": {"type": "json_object"}}


@functools.lru_cache(maxsize=64)
def _grammar_of(schema_json: str, *, compact: bool = False) -> str | None:
    """The GBNF of a schema, converted once (the plan schema is the same for every call);
    None, said once, for a schema GBNF cannot express here: that output goes unconstrained
    and is checked after decoding."""
    try:
        if compact:
            return json_schema_to_gbnf(json.loads(schema_json), ws=COMPACT_WS)
        return json_schema_to_gbnf(json.loads(schema_json))
    except UnsupportedSchema as exc:
        log.warning("schema_not_expressible_as_gbnf", error=str(exc))
        return None


def _json_schema_format(schema: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "json_schema",
        "json_schema": {"name": "output", "schema": schema, "strict": True},
    }
