"""The LLM policy over a scripted engine (no model runs here): confidence from token
probabilities, the plan schema, routes against the threshold, and plans that fail
validation decoded again with the error in the prompt. The same policy over real vLLM
engines: `tests/fleet/test_llm_engines.py`."""

from __future__ import annotations

import json
import math

import jsonschema
import pytest

from agentkeel.examples.shop.rules.policy import RulesPolicy
from agentkeel.inference.engines.protocol import TokenLogprob
from agentkeel.inference.llm.confidence import label_confidence
from agentkeel.inference.llm.plan_document import PlanDocumentError, model_document, plan_fields
from agentkeel.inference.llm.plan_schema import plan_json_schema
from agentkeel.inference.llm.policy import LlmPolicy
from agentkeel.inference.llm.prompts import PATCH_INSTRUCTION, intents, system_prefix
from agentkeel.schemas.errors import INVALID_MODEL_OUTPUT
from agentkeel.schemas.model_calls import PlanInput, RouteInput
from agentkeel.schemas.plan.model import Plan
from agentkeel.schemas.result import StepOutcome, StepStatus
from agentkeel.schemas.route import ConfidenceBasis, Route, Tier
from tests.support.fakes import FakeEngine
from tests.support.plans import BAD_REFERENCE_PLAN, FAILED_LOOKUP, GOOD_PLAN


def lp(token: str, top: dict[str, float]) -> TokenLogprob:
    return TokenLogprob(
        token=token, logprob=math.log(top[token]), top={t: math.log(p) for t, p in top.items()}
    )


# --- confidence ------------------------------------------------------------------------------
def test_confidence_renormalizes_over_the_labels() -> None:
    # 20% of the raw mass is on a token that leads to no label: it does not count.
    position = lp("refund", {"refund": 0.6, "policy": 0.2, " the": 0.2})
    assert label_confidence([position], ["refund", "policy"]) == pytest.approx(0.75)


def test_confidence_multiplies_along_a_multi_token_label() -> None:
    first = lp("order", {"order": 0.9, "policy": 0.1})
    second = lp("_status", {"_status": 0.5, "_stock": 0.5})
    labels = ["order_status", "order_stock", "policy"]
    assert label_confidence([first, second], labels) == pytest.approx(0.45)


def test_confidence_accepts_json_quoted_labels() -> None:
    position = lp('"refund"', {'"refund"': 0.6, '"policy"': 0.2, "x": 0.2})
    assert label_confidence([position], ["refund", "policy"]) == pytest.approx(0.75)


def test_confidence_counts_the_models_space_led_spelling_of_a_label() -> None:
    # After "Intent:" the model prefers " order"; the grammar forces "refund" at 1%.
    position = lp("refund", {"refund": 0.01, " order": 0.5, " policy": 0.09, ",": 0.4})
    labels = ["refund", "order_status", "policy"]
    assert label_confidence([position], labels) == pytest.approx(0.01 / 0.6)


def test_mass_outside_the_top_alternatives_lowers_the_confidence() -> None:
    position = lp("refund", {"refund": 0.3, "policy": 0.1})  # 60% unlisted
    assert label_confidence([position], ["refund", "policy"]) == pytest.approx(0.3)


def test_a_label_no_token_led_to_is_not_measured() -> None:
    position = lp("Ġrefund", {"Ġrefund": 0.9, "x": 0.1})
    assert label_confidence([position], ["refund", "policy"]) is None


def test_no_logprobs_measure_nothing() -> None:
    assert label_confidence(None, ["a", "b"]) is None
    assert label_confidence([], ["a", "b"]) is None


async def test_an_unmeasured_route_follows_the_declared_rule_not_a_number() -> None:
    engine = FakeEngine(
        label_probs={"order_status": 0.99}, documents=[GOOD_PLAN], returns_logprobs=False
    )
    question = RouteInput(question="Where is order 1002?")
    escalated = await LlmPolicy(engine, tier=Tier.LIGHT, threshold=0.1).route(question)
    assert not escalated.confident and escalated.draft_plan is None
    assert escalated.route.basis == ConfidenceBasis.UNMEASURED
    assert escalated.route.confidence == 0.0 and "unmeasured" in escalated.route.reason
    trusting = LlmPolicy(engine, tier=Tier.LIGHT, unmeasured_route="trust")
    trusted = await trusting.route(question)
    assert trusted.confident and trusted.draft_plan is not None
    assert trusted.route.intent == "order_status"
    assert trusted.route.basis == ConfidenceBasis.UNMEASURED


async def test_a_measured_route_says_so() -> None:
    engine = FakeEngine(label_probs={"order_status": 0.9, "refund": 0.1}, documents=[GOOD_PLAN])
    routed = await LlmPolicy(engine, tier=Tier.LIGHT).route(RouteInput(question="Where is 1002?"))
    assert routed.route.basis == ConfidenceBasis.LOGPROBS
    assert routed.route.confidence == pytest.approx(0.9)


async def test_the_rules_policy_says_its_levels_are_rules() -> None:
    routed = await RulesPolicy().route(RouteInput(question="Where is order 1002?"))
    assert routed.route.basis == ConfidenceBasis.RULES


# --- plan schema -----------------------------------------------------------------------------
def test_plan_schema_accepts_typed_arguments_and_references() -> None:
    jsonschema.validate(model_document(GOOD_PLAN), plan_json_schema())


def test_a_model_writes_each_step_as_its_tool_and_reads_back_the_same_plan() -> None:
    written = model_document(GOOD_PLAN)
    assert all(
        len(set(step) - {"after", "when", "for_each", "optional", "repeat"}) == 1
        for step in written["steps"]
    )
    assert Plan.model_validate(plan_fields(written)) == Plan.model_validate(plan_fields(GOOD_PLAN))


@pytest.mark.parametrize(
    "step", [{}, {"get_order": {"order_id": 1}, "track_shipment": {"tracking_number": "T1"}}]
)
def test_a_step_naming_no_tool_or_two_is_refused_by_position(step: dict[str, object]) -> None:
    with pytest.raises(PlanDocumentError, match="step 1 must name exactly one tool"):
        plan_fields({"rationale": "x", "steps": [step]})


@pytest.mark.parametrize(
    ("change", "why"),
    [
        ({"tool": "drop_database"}, "unknown tool"),
        ({"args": {"order_id": "1002"}}, "a string that is not a reference"),
        ({"args": {"order_id": 1002, "extra": 1}}, "an argument the tool does not take"),
        ({"args": {}}, "a missing required argument"),
        ({"id": "step one"}, "a malformed step id"),
    ],
)
def test_plan_schema_rejects(change: dict[str, object], why: str) -> None:
    step = {"id": "s1", "tool": "get_order", "args": {"order_id": 1002}, **change}
    document = {"rationale": why, "steps": [step]}
    if "id" not in change:
        document = model_document(document)  # the form a model writes
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(document, plan_json_schema())


def test_heavy_plan_schema_starts_with_an_intent() -> None:
    schema = plan_json_schema(intents())
    written = model_document(GOOD_PLAN)
    jsonschema.validate({**written, "intent": "order_status"}, schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(written, schema)


# --- route -----------------------------------------------------------------------------------
async def test_confident_route_brings_the_light_models_draft_plan() -> None:
    engine = FakeEngine(label_probs={"order_status": 0.9, "refund": 0.1}, documents=[GOOD_PLAN])
    policy = LlmPolicy(engine, tier=Tier.LIGHT, threshold=0.7)
    routed = await policy.route(RouteInput(question="Where is order 1002?"))
    assert routed.confident
    assert routed.route.tier == Tier.LIGHT
    assert routed.route.intent == "order_status"
    assert routed.route.confidence == pytest.approx(0.9)
    assert "threshold 0.70" in routed.route.reason
    assert routed.draft_plan is not None
    assert [s.tool for s in routed.draft_plan.steps] == ["get_order", "track_shipment"]
    assert routed.route.tools == ["get_order", "track_shipment"]
    assert all(p.startswith(system_prefix()) for p in engine.prompts)  # prefix-cache friendly


async def test_route_below_threshold_asks_for_a_plan() -> None:
    engine = FakeEngine(label_probs={"order_status": 0.6, "refund": 0.4}, documents=[GOOD_PLAN])
    routed = await LlmPolicy(engine, tier=Tier.LIGHT, threshold=0.7).route(
        RouteInput(question="hmm, my order?")
    )
    assert not routed.confident
    assert routed.draft_plan is None
    assert routed.route.confidence == pytest.approx(0.6)
    assert len(engine.prompts) == 1  # no plan was drafted


async def test_uncertain_label_is_never_confident() -> None:
    engine = FakeEngine(label_probs={"uncertain": 0.95, "refund": 0.05})
    routed = await LlmPolicy(engine, tier=Tier.LIGHT, threshold=0.5).route(
        RouteInput(question="asdf")
    )
    assert not routed.confident
    assert routed.route.intent == "unknown"
    assert "uncertain" in routed.route.reason


# --- plan ------------------------------------------------------------------------------------
async def test_invalid_plan_is_decoded_again_with_the_error_in_the_prompt() -> None:
    engine = FakeEngine(documents=[BAD_REFERENCE_PLAN, GOOD_PLAN])
    policy = LlmPolicy(engine, tier=Tier.LIGHT, plan_attempts=3)
    route = Route(intent="order_status", confidence=0.5, tier=Tier.LIGHT)
    planned = await policy.plan(PlanInput(question="Where is order 1002?", route=route))
    assert planned.error is None
    assert [s.id for s in planned.plan.steps] == ["s1", "s2"]
    assert "MissingReference" not in engine.prompts[0]
    assert "MissingReference" in engine.prompts[1] and "s9" in engine.prompts[1]


async def test_no_usable_plan_after_every_decode_is_a_clear_plan_error() -> None:
    engine = FakeEngine(documents=[BAD_REFERENCE_PLAN, '{"rationale": "cut'])
    policy = LlmPolicy(engine, tier=Tier.LIGHT, plan_attempts=2)
    route = Route(intent="order_status", confidence=0.5, tier=Tier.LIGHT)
    planned = await policy.plan(PlanInput(question="Where is order 1002?", route=route))
    assert planned.plan.steps == []
    assert planned.error is not None
    assert planned.error.type == INVALID_MODEL_OUTPUT
    assert "not JSON" in planned.error.message
    assert planned.error.non_retryable


async def test_a_replan_that_patches_asks_for_ids_and_keeps_the_round_before() -> None:
    patch = {
        "rationale": "the order id was mistyped",
        "steps": [{"id": "s1", "get_order": {"order_id": 1002}}],
        "answer": "Order {$s1.status}, parcel {$s2.status}.",
    }
    engine = FakeEngine(documents=[json.dumps(patch)])
    policy = LlmPolicy(engine, tier=Tier.LIGHT, plan_attempts=1)
    route = Route(intent="order_status", confidence=0.5, tier=Tier.LIGHT)
    failed = FAILED_LOOKUP
    waited = StepOutcome(id="s2", tool="track_shipment", args={}, status=StepStatus.SKIPPED)
    asked = PlanInput(
        question="Where is order 1002?",
        route=route,
        attempt=1,
        previous_steps=[failed, waited],
        patch=True,
    )
    planned = await policy.plan(asked)
    assert planned.error is None, planned.error
    assert [(s.id, s.args) for s in planned.plan.steps] == [("s1", {"order_id": 1002})]
    assert planned.plan.answer is not None, "the template may name a step the patch keeps"
    assert PATCH_INSTRUCTION in engine.prompts[0]
    # The heavy tier's patch reads no intent again: the round before's reading stands.
    heavy = FakeEngine(documents=[json.dumps({k: patch[k] for k in ("rationale", "steps")})])
    rerouted = asked.model_copy(update={"route": route.model_copy(update={"tier": Tier.HEAVY})})
    replanned = await LlmPolicy(heavy, tier=Tier.HEAVY, plan_attempts=1).plan(rerouted)
    assert replanned.error is None and replanned.route is None and replanned.patch
    # Without `patch`, the same round is planned whole, its ids by position.
    assert (
        "id" not in plan_json_schema(None)["properties"]["steps"]["items"]["anyOf"][0]["properties"]
    )
    assert (
        "id"
        in plan_json_schema(None, patch=True)["properties"]["steps"]["items"]["anyOf"][0][
            "required"
        ]
    )
