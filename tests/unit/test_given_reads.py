"""Reads the run started from the request, given to the planner as steps `p1`, `p2`, ...
(`inference.llm.given_reads`): the prompt names them, the schema lets the plan read them
and write none of its own, the policy puts them first, a step that makes a given call
again is folded into it, and a streamed step that reads one is handed out at once."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

import jsonschema
import pytest

from agentkeel.inference.llm.given_reads import given_steps, prompt_block, with_given
from agentkeel.inference.llm.plan_schema import plan_json_schema
from agentkeel.inference.llm.plan_stream import STEP_SINK, StepReader
from agentkeel.inference.llm.policy import LlmPolicy
from agentkeel.schemas.model_calls import PlanInput, RouteInput
from agentkeel.schemas.plan.model import Plan
from agentkeel.schemas.plan.validation import PlanValidationError, validate_plan
from agentkeel.schemas.route import Route, Tier
from agentkeel.schemas.speculation import PredictedCall
from agentkeel.schemas.tools import TOOLS
from tests.support.fakes import FakeEngine

ORDER = PredictedCall(tool="get_order", args={"order_id": 1001})
OTHER = PredictedCall(tool="get_order", args={"order_id": 1002})


def _given() -> list[PredictedCall]:
    return given_steps([ORDER, OTHER])


def _plan(*steps: Mapping[str, Any], answer: str | None = None) -> Plan:
    return Plan.model_validate({"rationale": "r", "steps": list(steps), "answer": answer})


def test_the_started_reads_are_given_as_p_steps_and_named_in_the_prompt() -> None:
    given = _given()
    assert [c.step for c in given] == ["p1", "p2"]
    block = prompt_block(given)
    assert 'p1 {"get_order": {"order_id": 1001}}' in block
    assert 'p2 {"get_order": {"order_id": 1002}}' in block
    assert prompt_block([]) == ""


def test_a_plan_that_only_reads_the_given_steps_comes_out_after_them() -> None:
    written = _plan(
        {"id": "s1", "tool": "track_shipment", "args": {"tracking_number": "$p2.tracking_number"}},
        answer="Order {$p1.status}; parcel {$s1.status}.",
    )
    plan = with_given(written, _given(), TOOLS)
    assert [(s.id, s.tool) for s in plan.steps] == [
        ("p1", "get_order"),
        ("p2", "get_order"),
        ("s1", "track_shipment"),
    ]
    assert plan.answer == "Order {$p1.status}; parcel {$s1.status}."
    validate_plan(plan, TOOLS)


def test_a_step_that_makes_a_given_call_again_is_folded_into_it_with_its_references() -> None:
    # A model that ignored the hint wrote the whole plan: its own s1 is the given p2 (same
    # call, the argument spelled as a string); its s2 reads "$s1", which must follow.
    written = _plan(
        {"id": "s1", "tool": "get_order", "args": {"order_id": "1002"}},
        {"id": "s2", "tool": "track_shipment", "args": {"tracking_number": "$s1.tracking_number"}},
        {"id": "s3", "tool": "search_kb", "args": {"query": "late parcel"}, "after": ["s1", "s2"]},
        answer="Order {$s1.status}, parcel {$s2.status}.",
    )
    plan = with_given(written, _given(), TOOLS)
    by_id = {s.id: s for s in plan.steps}
    assert list(by_id) == ["p2", "s2", "s3"]  # p1, named nowhere, is no step
    assert by_id["s2"].args == {"tracking_number": "$p2.tracking_number"}
    assert by_id["s3"].after == ["p2", "s2"]
    assert plan.answer == "Order {$p2.status}, parcel {$s2.status}."
    validate_plan(plan, TOOLS)


def test_a_models_own_s1_never_means_a_given_step() -> None:
    # Its first step is another call: "$s1" stays its own, whatever was given.
    written = _plan(
        {"id": "s1", "tool": "get_order", "args": {"order_id": 1003}},
        {"id": "s2", "tool": "track_shipment", "args": {"tracking_number": "$s1.tracking_number"}},
    )
    plan = with_given(written, _given(), TOOLS)
    assert [s.id for s in plan.steps] == ["s1", "s2"]  # the given reads are named nowhere
    assert plan.steps[1].args == {"tracking_number": "$s1.tracking_number"}


def test_a_given_read_is_kept_where_the_plan_names_it_and_only_there() -> None:
    search = {"id": "s1", "tool": "search_kb", "args": {"query": "late parcel"}}
    assert [s.id for s in with_given(_plan(search), _given(), TOOLS).steps] == ["s1"]
    kept = with_given(_plan(search), _given(), TOOLS, uses=["p2"])
    assert [s.id for s in kept.steps] == ["p2", "s1"]
    waits = with_given(_plan({**search, "after": ["p1"]}), _given(), TOOLS)
    assert [s.id for s in waits.steps] == ["p1", "s1"]
    answered = with_given(_plan(answer="Order {$p2.status}."), _given(), TOOLS)
    assert [s.id for s in answered.steps] == ["p2"]


def test_a_reference_to_a_step_never_given_is_refused_by_validation() -> None:
    written = _plan({"id": "s1", "tool": "search_kb", "args": {"query": "$p3.status"}})
    with pytest.raises(PlanValidationError):
        validate_plan(with_given(written, _given(), TOOLS), TOOLS)


def test_the_schema_with_given_steps_admits_no_steps_and_p_references() -> None:
    schema = plan_json_schema(given=2)
    document = {"rationale": "r", "steps": [], "answer": "Order {$p1.status}."}
    jsonschema.validate(document, schema)
    jsonschema.validate(
        {"rationale": "r", "steps": [{"search_kb": {"query": "x"}, "after": ["p1"]}]}, schema
    )
    jsonschema.validate({"rationale": "r", "uses": ["p1", "p2"], "steps": []}, schema)
    with pytest.raises(jsonschema.ValidationError):  # only the steps it was given
        jsonschema.validate({"rationale": "r", "uses": ["p3"], "steps": []}, schema)
    plain = plan_json_schema()  # no given steps: at least one step, answers name s steps
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(document, plain)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(
            {"rationale": "r", "steps": [{"get_order": {"order_id": 1}}], "answer": "{$p1.id}"},
            plain,
        )


def test_a_streamed_step_that_reads_a_given_one_is_handed_out_at_once() -> None:
    reader = StepReader(ready=["p1"])
    text = json.dumps({"rationale": "r", "steps": [{"search_kb": {"query": "$p1.status"}}]})
    assert reader.feed(text) == [
        PredictedCall(tool="search_kb", args={"query": "$p1.status"}, step="s1", after=["p1"])
    ]
    assert StepReader().feed(text) == []  # nothing given: it waits for the whole plan


def _unsure() -> Route:
    return Route(intent="order_status", confidence=0.5, tier=Tier.LIGHT, reason="unsure")


async def test_the_policy_plans_after_the_given_reads_and_streams_what_reads_them() -> None:
    document = {
        "intent": "order_status",
        "rationale": "r",
        "steps": [
            # A cached read (it may start early) of the given step's output.
            {"id": "s1", "tool": "search_kb", "args": {"query": "$p1.status"}}
        ],
        "answer": "Order {$p1.status}.",
    }
    engine = FakeEngine("streaming", documents=[document], streams_json=True)
    sent: list[PredictedCall] = []

    async def sink(call: PredictedCall) -> None:
        sent.append(call)

    asked = PlanInput(question="where is order 1001", route=_unsure(), started_reads=[ORDER])
    token = STEP_SINK.set(sink)
    try:
        planned = await LlmPolicy(engine, tier=Tier.HEAVY).plan(asked)
    finally:
        STEP_SINK.reset(token)
    assert planned.error is None
    assert [(s.id, s.tool) for s in planned.plan.steps] == [
        ("p1", "get_order"),
        ("s1", "search_kb"),
    ]
    assert re.search(r'^p1 \{"get_order": \{"order_id": 1001\}\}$', engine.prompts[-1], re.M)
    assert [(c.step, c.after) for c in sent] == [("s1", ["p1"])]


async def test_a_replan_is_given_nothing() -> None:
    step = {"id": "s1", "tool": "get_order", "args": {"order_id": 1}}
    engine = FakeEngine(documents=[{"intent": "order_status", "rationale": "r", "steps": [step]}])
    asked = PlanInput(question="q", route=_unsure(), started_reads=[ORDER], attempt=1)
    planned = await LlmPolicy(engine, tier=Tier.HEAVY).plan(asked)
    assert [s.id for s in planned.plan.steps] == ["s1"]
    assert "p1 " not in engine.prompts[-1]


async def test_a_confident_routers_draft_plan_builds_on_the_given_reads_too() -> None:
    engine = FakeEngine(
        label_probs={"order_status": 0.95},
        documents=[{"rationale": "r", "steps": [], "answer": "Order {$p1.status}."}],
    )
    routed = await LlmPolicy(engine, tier=Tier.LIGHT).route(
        RouteInput(question="where is order 1001", started_reads=[ORDER])
    )
    assert routed.confident and routed.draft_plan is not None
    assert [s.id for s in routed.draft_plan.steps] == ["p1"]
    assert routed.draft_plan.answer == "Order {$p1.status}."


async def test_the_ideal_planner_given_the_read_decodes_less_and_plans_the_same_calls() -> None:
    """The real engine and policy against the token-timed server and the benchmarks' ideal
    model (a fake at the model boundary): given the order's read, the plan writes only the
    three steps after it, in fewer tokens, and makes the same calls."""
    pytest.importorskip("openai", reason="openai is not installed (the llm-cpu or gpu extra)")
    from agentkeel.inference.engines.openai_compat import OpenAICompatEngine
    from bench.ideal_model import IdealShapeModel
    from bench.peer_cases import Case
    from bench.token_server import Speed, serving

    case = Case("diamond", 1, named=True)
    read = PredictedCall(tool="get_order", args={"order_id": case.order_ids[0]})
    plans, tokens = [], []
    for started in ([], [read]):
        async with serving(IdealShapeModel(), Speed("test", 0.0, 0.0)) as (url, server):
            engine = OpenAICompatEngine(base_url=url, model="ideal", api="chat")
            await engine.start()
            asked = PlanInput(question=case.question, route=_unsure(), started_reads=started)
            try:
                planned = await LlmPolicy(engine, tier=Tier.HEAVY).plan(asked)
            finally:
                await engine.close()
        assert planned.error is None, planned.error
        plans.append(planned.plan)
        tokens.append(server.log.output_tokens)
    whole, given = plans
    assert [s.id for s in given.steps] == ["p1", "s1", "s2", "s3"]
    assert _calls(given) == _calls(whole)
    assert tokens[1] < tokens[0] - 10  # the order's read is not decoded again


def _calls(plan: Plan) -> list[tuple[str, str]]:
    """Each step's call, its references spelled by the tool of the step they read."""
    tools = {s.id: s.tool for s in plan.steps}
    spelled = []
    for step in plan.steps:
        text = json.dumps([step.args, step.after], sort_keys=True)
        spelled.append((step.tool, re.sub(r"\b([sp][0-9]+)\b", lambda m: tools[m[1]], text)))
    return spelled


def test_a_plan_of_nothing_but_the_given_reads_keeps_them_all() -> None:
    # No step written, none named, no `uses`: the given reads are the whole plan (an
    # empty plan would be refused, and the planner decoded again for nothing).
    plan = with_given(_plan(), _given(), TOOLS)
    assert [s.id for s in plan.steps] == ["p1", "p2"]
    validate_plan(plan, TOOLS)


def test_a_streamed_step_waiting_for_more_than_a_round_holds_waits_for_the_plan() -> None:
    given = [f"p{i}" for i in range(1, 9)]
    # Nine inputs: seven given steps and s0 in `after`, and p1 by reference.
    step = {"search_kb": {"query": "$p1.status"}, "after": [*given[1:], "s0"]}
    text = json.dumps({"rationale": "r", "steps": [step]})
    assert StepReader(ready=[*given, "s0"]).feed(text) == []  # not a crash: the plan runs it


def test_a_patch_of_a_round_that_had_given_steps_may_name_them() -> None:
    patch = plan_json_schema(patch=True)
    step = {"id": "s3", "search_kb": {"query": "$p1.status"}, "after": ["p1"]}
    jsonschema.validate({"rationale": "r", "steps": [step], "answer": "{$p1.status}"}, patch)
