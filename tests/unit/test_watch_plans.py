"""Watches and waits in plans: bad ones are named plan errors, the rules plan them for the
questions that ask, and the LLM plan schema lets reads repeat and nothing else."""

from __future__ import annotations

from typing import Any

import pytest

from agentkeel.examples.shop.rules.policy import RulesPolicy
from agentkeel.inference.llm.plan_schema import plan_json_schema
from agentkeel.schemas import errors
from agentkeel.schemas.model_calls import RouteInput
from agentkeel.schemas.plan.model import Plan
from agentkeel.schemas.plan.references import PlanValidationError
from agentkeel.schemas.plan.validation import validate_plan
from agentkeel.schemas.tools import TOOLS
from tests.support.plans import watch


@pytest.mark.parametrize(
    ("step", "kind"),
    [
        (watch("s1", 1, ["shipped"]) | {"tool": "create_refund"}, errors.INVALID_REPEAT),
        (
            {
                "id": "s1",
                "tool": "get_order",
                "args": {"order_id": 1},
                "repeat": {"until": {"ref": "$s0.status", "in": ["x"]}},
            },
            errors.INVALID_REPEAT,
        ),
        (
            {
                "id": "s1",
                "tool": "get_order",
                "args": {"order_id": 1},
                "repeat": {"until": {"ref": "$s1.colour", "in": ["x"]}},
            },
            errors.MISSING_REFERENCE,
        ),
        ({"id": "w", "tool": "wait", "args": {}}, errors.INVALID_ARGUMENTS),
        ({"id": "w", "tool": "wait", "args": {"seconds": -1}}, errors.INVALID_ARGUMENTS),
        ({"id": "w", "tool": "wait", "args": {"until": "tomorrow"}}, errors.INVALID_ARGUMENTS),
        (
            {"id": "w", "tool": "wait", "args": {"until": "2026-12-01T09:00:00"}},
            errors.INVALID_ARGUMENTS,
        ),
    ],
)
def test_bad_waits_and_repeats_are_named_plan_errors(step: dict[str, Any], kind: str) -> None:
    if step["tool"] == "create_refund":
        step = {**step, "args": {"order_id": 1, "amount_cents": 100, "reason": "x"}}
    with pytest.raises(PlanValidationError) as caught:
        validate_plan(Plan.model_validate({"steps": [step]}), TOOLS)
    assert caught.value.kind == kind


def test_a_repeat_faster_than_a_second_is_refused_by_the_plan_model() -> None:
    with pytest.raises(ValueError, match="every_s"):
        Plan.model_validate({"steps": [watch("s1", 1, ["shipped"], every_s=0.1)]})


@pytest.mark.parametrize(
    ("question", "statuses", "delay_s"),
    [
        ("Tell me when order 1002 ships", ["shipped", "delivered"], None),
        ("Please let me know once order #1002 has been delivered", ["delivered"], None),
        ("notify me as soon as order 1002 is dispatched", ["shipped", "delivered"], None),
        ("check order 1002 again in 2 hours", None, 7200.0),
        ("Could you look at order 1002 again in 30 minutes?", None, 1800.0),
    ],
)
async def test_the_rules_policy_plans_watches_and_waits(
    question: str, statuses: list[str] | None, delay_s: float | None
) -> None:
    routed = await RulesPolicy().route(RouteInput(question=question))
    assert routed.confident and routed.draft_plan is not None
    steps = routed.draft_plan.steps
    validate_plan(routed.draft_plan, TOOLS)
    read = next(s for s in steps if s.tool == "get_order")
    if statuses is None:
        assert read.repeat is None
    else:
        assert read.repeat is not None and read.repeat.until.in_ == statuses
    waits = [s for s in steps if s.tool == "wait"]
    if delay_s is None:
        assert waits == []
    else:
        assert [w.args for w in waits] == [{"seconds": delay_s}] and read.after == [waits[0].id]


async def test_a_question_about_now_plans_no_watch() -> None:
    for question in ("Where is order 1002?", "Will order 1001 arrive in 2 days?"):
        routed = await RulesPolicy().route(RouteInput(question=question))
        assert routed.draft_plan is not None
        assert all(s.repeat is None and s.tool != "wait" for s in routed.draft_plan.steps)


def test_the_llm_plan_schema_lets_reads_repeat_and_nothing_else() -> None:
    schema = plan_json_schema()
    steps = {s["required"][0]: s for s in schema["properties"]["steps"]["items"]["anyOf"]}
    assert "repeat" in steps["get_order"]["properties"]
    assert "repeat" not in steps["create_refund"]["properties"]
    assert "repeat" not in steps["wait"]["properties"]
    every = steps["get_order"]["properties"]["repeat"]["properties"]["every_s"]
    assert every["minimum"] == 1
