"""Every schema the engines send in `json_schema` mode is one OpenAI's strict structured
outputs accept (`tests.support.openai_strict`: the documented rules), and the answer to a
strict schema reads back as agentkeel's own schema reads it."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agentkeel.inference.engines.openai_output import parse_output
from agentkeel.inference.engines.protocol import (
    ChoiceConstraint,
    Constraint,
    ConstraintViolationError,
    JsonSchemaConstraint,
)
from agentkeel.inference.engines.structured import structured_body
from agentkeel.inference.llm.plan_schema import plan_json_schema
from agentkeel.inference.llm.prompts import JOIN_LABELS, intents, route_labels
from agentkeel.inference.llm.route_reading import reported_route_schema
from tests.support.openai_strict import strict_problems

CONSTRAINTS: dict[str, Constraint] = {
    "route label": ChoiceConstraint(choices=list(route_labels())),
    "join decision": ChoiceConstraint(choices=list(JOIN_LABELS)),
    "reported route": JsonSchemaConstraint(json_schema=reported_route_schema(route_labels())),
    "plan, reading the intent": JsonSchemaConstraint(json_schema=plan_json_schema(intents())),
    "plan of a known intent": JsonSchemaConstraint(json_schema=plan_json_schema(None)),
    "a replan's patch": JsonSchemaConstraint(json_schema=plan_json_schema(None, patch=True)),
}


def _sent(constraint: Constraint) -> dict[str, Any]:
    """The schema as the engine sends it to an OpenAI-compatible server in json_schema mode."""
    body = structured_body(constraint, "json_schema", chat=True)
    response_format = body["response_format"]
    assert response_format["type"] == "json_schema"
    assert response_format["json_schema"]["strict"] is True
    schema: dict[str, Any] = response_format["json_schema"]["schema"]
    return schema


@pytest.mark.parametrize("name", list(CONSTRAINTS))
def test_every_schema_sent_is_accepted_by_strict_structured_outputs(name: str) -> None:
    assert strict_problems(_sent(CONSTRAINTS[name])) == []


def test_the_checker_refuses_what_strict_mode_refuses() -> None:
    bare_enum = {"type": "string", "enum": ["a", "b"]}
    assert strict_problems(bare_enum) == ["(root): must be an object, not anyOf"]
    loose = {"type": "object", "properties": {"a": {"type": "string", "maxLength": 3}}}
    assert strict_problems(loose) == [
        "(root): additionalProperties must be false",
        "(root): properties not required: ['a']",
        "(root)/a: keyword 'maxLength' is not supported here",
    ]
    # The plan schema as agentkeel's own constrained decoders take it is not strict.
    assert strict_problems(plan_json_schema(intents()))


def test_a_strict_plan_answer_reads_back_without_its_nulls() -> None:
    constraint = CONSTRAINTS["plan, reading the intent"]
    step = {"get_order": {"order_id": 1001}, "after": None, "for_each": None, "when": None,
            "optional": None, "repeat": None}  # fmt: skip
    answer = {"intent": intents()[0], "rationale": "look it up", "steps": [step],
              "answer": None}  # fmt: skip
    parsed = parse_output(constraint, json.dumps(answer), "stop", "json_schema")
    assert parsed["steps"] == [{"get_order": {"order_id": 1001}}]
    assert "answer" not in parsed


def test_bounds_strict_mode_cannot_carry_are_still_checked() -> None:
    constraint = CONSTRAINTS["plan, reading the intent"]
    answer = {"intent": intents()[0], "rationale": "x" * 1000,
              "steps": [{"get_order": {"order_id": 1001}}]}  # fmt: skip
    with pytest.raises(ConstraintViolationError, match="rationale"):
        parse_output(constraint, json.dumps(answer), "stop", "json_schema")


def test_a_strict_choice_reads_back_as_its_label() -> None:
    constraint = CONSTRAINTS["route label"]
    label = route_labels()[0]
    assert parse_output(constraint, json.dumps({"choice": label}), "stop", "json_schema") == label
    with pytest.raises(ConstraintViolationError):
        parse_output(constraint, json.dumps({"choice": "nonsense"}), "stop", "json_schema")
