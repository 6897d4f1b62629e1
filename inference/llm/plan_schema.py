"""The JSON Schema a model's plan is decoded against: valid by construction.

Built from the tool catalog, so the grammar admits only known tools, each with its own
argument names and types, in the compact form a model writes (`plan_document`: a step is
`{"get_item": {"item_id": 1001}}`, its id its position). Any argument may instead be
a reference to an earlier step (`"$s1.account_id"`), in the exact shape
`schemas.plan.model.REFERENCE` accepts. What a grammar cannot express (that a
referenced step exists, that the types line up, that the graph has no cycle) the
scheduler's validation checks afterwards.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Any

from agentkeel.schemas.plan.model import MAX_WATCH_S, REPEAT_FLOOR_S
from agentkeel.schemas.speculation import GIVEN_PREFIX, given_id
from agentkeel.schemas.tools import TOOLS, ToolSpec
from agentkeel.schemas.tools.catalog import catalog_version

MAX_STEPS = 8
"""Longer plans are cut by the grammar: nothing in the catalog needs more."""
RATIONALE_CHARS = 160
STEP_ID_PATTERN = r"^s[0-9]{1,2}$"
REFERENCE_PATTERN = r"^\$[A-Za-z][A-Za-z0-9_]*(\.[A-Za-z0-9_]+)*$"
"""`schemas.plan.model.REFERENCE` without its capture groups (grammar backends ignore them)."""

_WRITTEN_OR_GIVEN = f"[s{GIVEN_PREFIX}]"
GIVEN_STEP_ID_PATTERN = rf"^{_WRITTEN_OR_GIVEN}[0-9]{{1,2}}$"
"""A step id where the planner was given steps (`given_reads`: `p1`, ...) besides its own."""
_ANSWER_TEXT = r"[A-Za-z0-9 ,.:;!?'()%&/+=#@_-]"
ANSWER_LEAD_CHARS = 60
ANSWER_SLOTS = 4
ANSWER_GAP_CHARS = 40


def _answer_pattern(ids: str) -> str:
    slot = rf"\{{\${ids}[0-9]{{1,2}}(\.[A-Za-z0-9_]{{1,32}}){{1,3}}(\|money)?\}}"
    return (
        f"^{_ANSWER_TEXT}{{0,{ANSWER_LEAD_CHARS}}}"
        f"({slot}{_ANSWER_TEXT}{{0,{ANSWER_GAP_CHARS}}}){{0,{ANSWER_SLOTS}}}$"
    )


ANSWER_PATTERN = _answer_pattern("s")
"""The answer template a planner may write (`schemas.plan.answer_template`): a short
sentence with at most four `{$sN.field}` placeholders. The grammar itself bounds its
length (every run of text and every placeholder has a ceiling), so a small model cannot
pad the plan past its token budget with it; no brace can appear but as a placeholder."""
ANSWER_MAX_CHARS = ANSWER_LEAD_CHARS + ANSWER_SLOTS * (2 + 3 + 3 * 33 + 6 + ANSWER_GAP_CHARS)

_REFERENCE: dict[str, Any] = {"type": "string", "pattern": REFERENCE_PATTERN}
_SCALAR: dict[str, Any] = {"type": ["string", "integer", "number", "boolean"]}
_CONDITION: dict[str, Any] = {
    "anyOf": [
        {
            "type": "object",
            "properties": {"ref": _REFERENCE, "is": {"enum": ["present", "absent"]}},
            "required": ["ref", "is"],
            "additionalProperties": False,
        },
        {
            "type": "object",
            "properties": {
                "ref": _REFERENCE,
                "in": {"type": "array", "items": _SCALAR, "minItems": 1, "maxItems": 50},
            },
            "required": ["ref", "in"],
            "additionalProperties": False,
        },
    ]
}
"""`schemas.plan.model.Condition`: run the step only when an earlier output passes a test."""


_REPEAT: dict[str, Any] = {
    "type": "object",
    "properties": {
        "until": _CONDITION,
        "every_s": {"type": "number", "minimum": REPEAT_FLOOR_S, "maximum": MAX_WATCH_S},
        "timeout_s": {"type": "number", "minimum": REPEAT_FLOOR_S, "maximum": MAX_WATCH_S},
    },
    "required": ["until"],
    "additionalProperties": False,
}
"""`schemas.plan.model.Repeat`: watch an idempotent read until its own output passes a test."""


def plan_json_schema(
    intents: Sequence[str] | None = None, *, patch: bool = False, given: int = 0
) -> dict[str, Any]:
    """The schema of a model's plan document: `{intent?, rationale, steps, answer?}`.

    The rationale stays first: with the steps first, the 270M test model repeated its
    steps up to the grammar's cap (`MAX_STEPS`) and ran past its token budget. The
    optional answer template comes last, once the steps whose outputs it names exist.

    Args:
        intents: when given, the document starts with an `intent` from this list, so a
            planner that re-routes (the heavy model) says what it thinks was asked.
        patch: a replan that patches the round before it (`PlanInput.patch`): each step
            names its `id` (the id of a step it replaces, or a new one).
        given: how many steps the planner was given, started already (`given_reads`:
            `p1` ...): it may write none of its own, its steps and answer may name the
            given ones, and `uses` lists those it keeps without naming them.
    """
    return _plan_schema(tuple(intents) if intents else (), patch, given, catalog_version())


@lru_cache(maxsize=64)
def _plan_schema(intents: tuple[str, ...], patch: bool, given: int, catalog: str) -> dict[str, Any]:
    """Made once per catalog (`catalog`, its version): a changed MCP tool list is offered
    from the next plan on."""
    properties: dict[str, Any] = {}
    required = []
    # Given steps (`p1`, ...) may be named: this plan's own, or a patched round's.
    named = given > 0 or patch
    if intents:
        properties["intent"] = {"type": "string", "enum": list(intents)}
        required.append("intent")
    properties["rationale"] = {"type": "string", "maxLength": RATIONALE_CHARS}
    if given:
        ids = [given_id(i) for i in range(given)]
        properties["uses"] = {"type": "array", "items": {"enum": ids}, "maxItems": given}
    properties["steps"] = {
        "type": "array",
        "minItems": 0 if given else 1,
        "maxItems": MAX_STEPS,
        "items": {
            "anyOf": [step_schema(spec, patch=patch, given=named) for spec in TOOLS.values()]
        },
    }
    properties["answer"] = {
        "type": "string",
        "pattern": _answer_pattern(_WRITTEN_OR_GIVEN if named else "s"),
    }
    required += ["rationale", "steps"]
    return {
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": False,
    }


def step_schema(spec: ToolSpec, *, patch: bool = False, given: bool = False) -> dict[str, Any]:
    """One step calling `spec`, as a model writes it (`plan_document`): the tool's name as
    the key of its arguments (typed, or references, or `$item` in a for_each), then its
    options; its id is its position, or (`patch`) its `id`, written first; (`given`) it
    may wait for a given step."""
    named = {"id": {"type": "string", "pattern": STEP_ID_PATTERN}} if patch else {}
    waits_for = GIVEN_STEP_ID_PATTERN if given else STEP_ID_PATTERN
    return {
        "type": "object",
        "properties": {
            **named,
            spec.name: _args_schema(spec),
            "after": {"type": "array", "items": {"type": "string", "pattern": waits_for}},
            "for_each": _REFERENCE,
            "when": _CONDITION,
            "optional": {"type": "boolean"},
            **({"repeat": _REPEAT} if spec.idempotent and not spec.runs_in_workflow else {}),
        },
        "required": [*named, spec.name],
        "additionalProperties": False,
    }


def _args_schema(spec: ToolSpec) -> dict[str, Any]:
    model_schema = spec.args_model.model_json_schema()
    properties: Mapping[str, Any] = model_schema.get("properties", {})
    return {
        "type": "object",
        "properties": {
            name: {"anyOf": [_plain(prop), _REFERENCE]} for name, prop in properties.items()
        },
        "required": list(model_schema.get("required", [])),
        "additionalProperties": False,
    }


def _plain(prop: Mapping[str, Any]) -> dict[str, Any]:
    """A property's type and bounds, without pydantic's titles and defaults. An optional
    argument (`X | None`, pydantic's `anyOf` with null) is written as `X`: a plan leaves
    it out rather than writing null (no plan schema admits null: `strict_schema`)."""
    branches = [b for b in prop.get("anyOf", ()) if b.get("type") != "null"]
    if branches:
        plain = [_plain(b) for b in branches]
        return plain[0] if len(plain) == 1 else {"anyOf": plain}
    keep = ("type", "minimum", "maximum", "minLength", "maxLength", "pattern", "enum")
    return {k: v for k, v in prop.items() if k in keep}
