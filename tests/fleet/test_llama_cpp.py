"""A llama.cpp-family server as the model tiers: llama.cpp's own server with Gemma 3 270M.

Its completions endpoint ignores OpenAI's `response_format`; the engine detects the server
and sends llama.cpp's own constraint fields, so plans are schema-valid by construction and
a run through the cascade ends with an answer instead of a `plan_error`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import jsonschema
import pytest_asyncio

from agentkeel.inference.engines.openai_compat import OpenAICompatEngine
from agentkeel.inference.engines.protocol import (
    ChoiceConstraint,
    GenerateRequest,
    JsonSchemaConstraint,
)
from agentkeel.inference.llm.cascade import CascadePolicy
from agentkeel.inference.llm.context import ContextBuilder
from agentkeel.inference.llm.plan_schema import plan_json_schema
from agentkeel.inference.llm.policy import LlmPolicy
from agentkeel.inference.llm.prompts import route_labels, system_prefix
from agentkeel.schemas.model_calls import PlanInput, RouteInput
from agentkeel.schemas.plan.validation import validate_plan
from agentkeel.schemas.route import ConfidenceBasis, Route, Tier
from agentkeel.schemas.speculation import PredictedCall
from agentkeel.schemas.tools import TOOLS
from tests.support.agent_stack import StackFactory
from tests.support.models import MODEL_NAME, report

PLAN_TOKENS = 200


@pytest_asyncio.fixture(scope="session", loop_scope="session")
async def llama_engine(llama_server: str) -> AsyncIterator[OpenAICompatEngine]:
    engine = OpenAICompatEngine(base_url=llama_server, model=MODEL_NAME, timeout_s=300)
    await engine.start()
    yield engine
    await engine.close()


def policy(engine: OpenAICompatEngine, tier: Tier, threshold: float = 0.7) -> LlmPolicy:
    return LlmPolicy(
        engine,
        tier=tier,
        threshold=threshold,
        context=ContextBuilder(budget=1400),
        plan_attempts=2,
        plan_max_tokens=PLAN_TOKENS,
        answer_max_tokens=24,
    )


async def test_the_server_is_detected_and_plans_are_schema_valid(
    llama_engine: OpenAICompatEngine,
) -> None:
    assert llama_engine.structured_mode == "llamacpp"
    schema = plan_json_schema()
    for question in ("Where is order 1001?", "Is SKU-00001 in stock?"):
        result = await llama_engine.generate(
            GenerateRequest(
                prompt=system_prefix() + f"User: {question}\nPlan JSON:",
                max_tokens=PLAN_TOKENS,
                constraint=JsonSchemaConstraint(json_schema=schema),
            )
        )
        report(f"llama.cpp plan ({result.finish_reason}): {result.text[:160]}")
        assert result.finish_reason == "stop", "a constrained plan ends, not cut at max_tokens"
        jsonschema.validate(result.parsed, schema)


async def test_a_choice_is_one_of_its_labels(llama_engine: OpenAICompatEngine) -> None:
    result = await llama_engine.generate(
        GenerateRequest(
            prompt=system_prefix() + "User: Where is order 1001?\nIntent:",
            max_tokens=16,
            constraint=ChoiceConstraint(choices=list(route_labels())),
        )
    )
    assert result.text.strip() in route_labels()
    routed = await policy(llama_engine, Tier.LIGHT, threshold=0.0).route(
        RouteInput(question="Where is order 1001?")
    )
    report(f"llama.cpp route: {routed.route.intent} p={routed.route.confidence:.3f}")
    assert routed.route.intent in (*route_labels(), "unknown")
    # llama.cpp's logprobs, like vLLM's, are the model's before the grammar's mask: the
    # confidence is measured from them (a 270M base model is rarely sure of anything),
    # not left unmeasured as when a server returns none.
    assert 0.0 <= routed.route.confidence <= 1.0
    assert routed.route.basis == ConfidenceBasis.LOGPROBS


async def test_a_run_through_the_cascade_ends_with_an_answer(
    make_stack: StackFactory, llama_engine: OpenAICompatEngine
) -> None:
    # One model plays both tiers; a threshold of 1.0 escalates whatever it is unsure of,
    # so the heavy path plans with real, constrained decoding.
    cascade = CascadePolicy(
        policy(llama_engine, Tier.LIGHT, threshold=1.0), policy(llama_engine, Tier.HEAVY)
    )
    stack = await make_stack(policy=cascade)
    result = await stack.ask("Where is order 1001?", options={"use_cache": False, "max_replans": 0})
    report(
        f"llama.cpp cascade: tier={result.route.tier.value} steps={len(result.steps)} "
        f"plan_error={result.plan_error and result.plan_error.type} "
        f"total {result.timings_ms.total:.0f} ms"
    )
    assert result.plan_error is None, result.plan_error
    assert result.steps and result.answer.strip()


async def test_a_plan_given_the_started_reads_decodes_within_its_budget(
    llama_engine: OpenAICompatEngine,
) -> None:
    """The schema of a planner given steps (`inference.llm.given_reads`: no step required,
    `uses`, `p` references in steps and answer) through llama.cpp's own grammar: the test
    model's plan checks out, within its token budget, and keeps only what it names."""
    started = [PredictedCall(tool="get_order", args={"order_id": 1001})]
    route = Route(intent="order_status", confidence=0.5, tier=Tier.LIGHT, reason="unsure")
    asked = PlanInput(question="Where is order 1001?", route=route, started_reads=started)
    planned = await policy(llama_engine, Tier.HEAVY).plan(asked)
    plan = planned.plan
    report(f"llama.cpp plan given p1: {[(s.id, s.tool) for s in plan.steps]} {plan.answer!r}")
    assert planned.error is None, planned.error  # a plan cut at its budget is refused
    validate_plan(plan, TOOLS)
    assert {s.id for s in plan.steps if s.id.startswith("p")} <= {"p1"}
    assert all(s.id.startswith("s") for s in plan.steps if s.id != "p1")


async def test_labels_with_quotes_and_backslashes_decode_exactly(
    llama_engine: OpenAICompatEngine,
) -> None:
    choices = ['say "yes"', "back\\slash"]
    result = await llama_engine.generate(
        GenerateRequest(
            prompt="Answer:", max_tokens=12, constraint=ChoiceConstraint(choices=choices)
        )
    )
    assert result.text in choices


async def test_a_gbnf_grammar_from_the_plan_schema_constrains_like_the_schema(
    llama_server: str,
) -> None:
    """The `gbnf` mode (llama-cpp-python's servers take only a grammar), checked with
    llama.cpp's own grammar engine: the converted plan schema yields schema-valid plans."""
    engine = OpenAICompatEngine(base_url=llama_server, model=MODEL_NAME, structured_output="gbnf")
    await engine.start()
    try:
        schema = plan_json_schema()
        result = await engine.generate(
            GenerateRequest(
                prompt=system_prefix() + "User: Can order 1002 be fulfilled from stock?\n"
                "Plan JSON:",
                max_tokens=PLAN_TOKENS,
                constraint=JsonSchemaConstraint(json_schema=schema),
            )
        )
        report(f"gbnf plan ({result.finish_reason}): {result.text[:160]}")
        assert result.finish_reason == "stop"
        jsonschema.validate(result.parsed, schema)
        optional = {
            "type": "object",
            "properties": {
                "a": {"type": "integer", "minimum": 0},
                "b": {"type": "string", "enum": ["x", "y"]},
                "c": {"type": "array", "items": {"type": "boolean"}, "maxItems": 2},
            },
            "required": ["c"],
            "additionalProperties": False,
        }
        small = await engine.generate(
            GenerateRequest(
                prompt='JSON: {"c": [true], "a": 3}\nJSON:',
                max_tokens=40,
                constraint=JsonSchemaConstraint(json_schema=optional),
            )
        )
        jsonschema.validate(small.parsed, optional)
    finally:
        await engine.close()


async def test_a_reported_route_decodes_on_the_real_server(
    llama_engine: OpenAICompatEngine, llama_server: str
) -> None:
    """`AGENTKEEL_ROUTE_CONFIDENCE=reported` through llama.cpp's grammar (its own fields) and
    through OpenAI's strict `json_schema` response format on its chat endpoint: a label of
    the list and a confidence on the bounded scale, however unsure a 270M base model is."""
    strict = OpenAICompatEngine(
        base_url=llama_server, model=MODEL_NAME, structured_output="json_schema", api="chat"
    )
    await strict.start()
    try:
        for engine in (llama_engine, strict):
            light = policy(engine, Tier.LIGHT, threshold=0.0)
            light.route_confidence = "reported"
            routed = await light.route(RouteInput(question="Where is order 1001?"))
            report(
                f"llama.cpp reported route ({engine.structured_mode}): "
                f"{routed.route.intent} {routed.route.confidence_told} ({routed.route.reason})"
            )
            assert routed.route.basis == ConfidenceBasis.REPORTED, routed.route.reason
            assert routed.route.intent in (*route_labels(), "unknown")
            assert round(routed.route.confidence * 10) == routed.route.confidence * 10
    finally:
        await strict.close()
