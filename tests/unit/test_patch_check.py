"""A replan's patch checked on its own inside the planner's retries (`patch_check`), and
the planner decoding again when its patch fails there (not a round of the run)."""

from __future__ import annotations

import json
from collections.abc import Mapping

import pytest

from agentkeel.inference.llm.policy import LlmPolicy
from agentkeel.schemas.errors import MISSING_REFERENCE, UNKNOWN_TOOL
from agentkeel.schemas.model_calls import PlanInput
from agentkeel.schemas.plan.model import Plan, PlanStep
from agentkeel.schemas.plan.patch_check import check_patch
from agentkeel.schemas.plan.references import PlanValidationError
from agentkeel.schemas.result import StepOutcome, StepStatus
from agentkeel.schemas.route import Route, Tier
from agentkeel.schemas.tools import TOOLS
from tests.support.fakes import FakeEngine
from tests.support.plans import FAILED_LOOKUP

LOOKED_UP = StepOutcome(
    id="s2", tool="get_order", args={"order_id": 1001}, status=StepStatus.SUCCEEDED, output={}
)
ROUND = [FAILED_LOOKUP, LOOKED_UP]


def _patch(*steps: Mapping[str, object]) -> Plan:
    return Plan(steps=[PlanStep.model_validate(step) for step in steps])


def test_a_patch_may_read_what_it_writes_and_what_the_round_keeps() -> None:
    patch = _patch(
        {"id": "s1", "tool": "get_order", "args": {"order_id": 1002}},
        {"id": "s3", "tool": "track_shipment", "args": {"tracking_number": "$s2.tracking_number"}},
        {"id": "s4", "tool": "track_shipment", "args": {"tracking_number": "$s1.tracking_number"}},
    )
    check_patch(patch, ROUND, TOOLS)


@pytest.mark.parametrize(
    ("step", "kind", "says"),
    [
        (  # reads the step that failed, which the patch does not write again
            {
                "id": "s3",
                "tool": "track_shipment",
                "args": {"tracking_number": "$s1.tracking_number"},
            },
            MISSING_REFERENCE,
            "'s1', which is not kept",
        ),
        (
            {
                "id": "s3",
                "tool": "track_shipment",
                "args": {"tracking_number": "$s9.tracking_number"},
            },
            MISSING_REFERENCE,
            "'s9', which is in no round",
        ),
        ({"id": "s3", "tool": "refund_everything", "args": {}}, UNKNOWN_TOOL, "refund_everything"),
    ],
)
def test_a_patch_is_refused_for_its_own_steps(
    step: dict[str, object], kind: str, says: str
) -> None:
    with pytest.raises(PlanValidationError) as refused:
        check_patch(_patch(step), ROUND, TOOLS)
    assert refused.value.kind == kind and says in refused.value.message


def test_a_kept_steps_output_is_read_by_its_tools_fields() -> None:
    """A field the kept step's tool does not return is refused as in any plan."""
    step = {"id": "s3", "tool": "track_shipment", "args": {"tracking_number": "$s2.no_such_field"}}
    with pytest.raises(PlanValidationError, match="no_such_field"):
        check_patch(_patch(step), ROUND, TOOLS)


async def test_a_refused_patch_is_decoded_again_with_its_error_in_the_planners_retries() -> None:
    bad = {
        "rationale": "retry",
        "steps": [{"id": "s3", "track_shipment": {"tracking_number": "$s1.tracking_number"}}],
    }
    good = {"rationale": "retry", "steps": [{"id": "s1", "get_order": {"order_id": 1002}}]}
    engine = FakeEngine(documents=[json.dumps(bad), json.dumps(good)])
    policy = LlmPolicy(engine, tier=Tier.LIGHT, plan_attempts=2)
    route = Route(intent="order_status", confidence=0.5, tier=Tier.LIGHT)
    asked = PlanInput(
        question="Where is order 1002?", route=route, attempt=1, previous_steps=ROUND, patch=True
    )
    planned = await policy.plan(asked)
    assert planned.error is None and planned.patch
    assert [s.id for s in planned.plan.steps] == ["s1"]
    assert len(engine.prompts) == 2 and "which is not kept" in engine.prompts[1]
