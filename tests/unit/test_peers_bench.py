"""`bench.peers`' questions and its check of each run's calls: an ideal model's rounds follow
the question's plan with resolved arguments, and a run that missed a call or called one
with other arguments is refused."""

from __future__ import annotations

import json

import pytest

from agentkeel.inference.llm.plan_schema import plan_json_schema
from bench import peer_fakes as fakes
from bench.ideal_model import IdealShapeModel
from bench.peer_cases import (
    Case,
    NoSuchOrder,
    case_of,
    expected_calls,
    failure_of,
    next_round,
    plan_of,
    result_of,
)

DIAMOND = "bench diamond #1 of aa: order 70008"


def test_a_question_names_its_own_entities_or_none() -> None:
    assert Case("diamond", 1, named=True).question == DIAMOND
    assert (
        Case("4-wide", 2, named=True).question
        == "bench 4-wide #2 of aa: orders 70016, 70017, 70018, 70019"
    )
    assert Case("chain", 3, named=False).question == "bench chain #3 of aa"
    assert case_of(f"Answer this.\n{DIAMOND}") == Case("diamond", 1, named=True)
    with pytest.raises(ValueError, match="not a bench question"):
        case_of("bench hexagon #1")


def test_the_ideal_rounds_follow_the_plan_with_resolved_arguments() -> None:
    first = next_round(DIAMOND, {})
    assert [(c.step_id, c.tool, c.args) for c in first] == [
        ("s1", "get_order", {"order_id": 70008})
    ]
    order = result_of("get_order", {"order_id": 70008})
    second = next_round(DIAMOND, {"s1": order})
    assert {c.step_id: c.args for c in second} == {
        "s2": {"sku": "SKU-70008"},
        "s3": {"tracking_number": "TRK0000070008"},
    }
    # s4 reads s2 and waits for s3.
    stock = result_of("check_inventory", {"sku": "SKU-70008"})
    assert [c.step_id for c in next_round(DIAMOND, {"s1": order, "s2": stock})] == ["s3"]
    parcel = result_of("track_shipment", {"tracking_number": "TRK0000070008"})
    last = next_round(DIAMOND, {"s1": order, "s2": stock, "s3": parcel})
    assert [(c.tool, c.args) for c in last] == [("search_kb", {"query": "Widget SKU-70008"})]
    wide = [
        len(next_round(Case(s, 1, named).question, {}))
        for s in ("4-wide", "8-wide")
        for named in (True, False)
    ]
    assert wide == [4, 4, 8, 8]
    cold = next_round("bench chain #5 of aa", {})
    assert [(c.tool, c.args) for c in cold] == [
        ("search_kb", {"query": "topic of question 5 of aa"})
    ]
    assert len(plan_of(Case("chain", 5, named=False))) == 4


def test_a_run_with_a_missing_or_wrong_call_is_refused() -> None:
    fakes.TOOL_LOG.calls["w-short"] = [("get_order", {"order_id": 70008})]
    with pytest.raises(fakes.WrongToolCalls):
        fakes.check_calls(DIAMOND, "w-short")
    wrong_topics = [("search_kb", {"query": f"topic {i} of question 1 of aa"}) for i in range(4)]
    fakes.TOOL_LOG.calls["w-wide"] = wrong_topics
    with pytest.raises(fakes.WrongToolCalls):  # topics 0..3, not 1..4
        fakes.check_calls("bench 4-wide #1 of aa", "w-wide")
    right = [("search_kb", {"query": f"topic {i} of question 1 of aa"}) for i in (4, 2, 3, 1)]
    fakes.TOOL_LOG.calls["w-right"] = right
    fakes.check_calls("bench 4-wide #1 of aa", "w-right")  # in any order


WRONG = Case("chain", 9, named=True, wrong_once=True)


def test_a_wrong_once_question_is_misread_until_its_failure_is_seen() -> None:
    assert WRONG.question == "bench chain #9 of aa, wrong once: order 70072"
    assert case_of(f"Answer this.\n{WRONG.question}") == WRONG
    with pytest.raises(ValueError, match="named"):
        Case("chain", 9, named=False, wrong_once=True)
    first = next_round(WRONG.question, {})
    assert [(c.tool, c.args) for c in first] == [("get_order", {"order_id": 10_070_072})]
    with pytest.raises(NoSuchOrder, match="order 10070072 not found"):
        result_of("get_order", {"order_id": 10_070_072})
    # The failure in the conversation corrects the reading, and only it does.
    seen = f"{WRONG.question}\nError: order 10070072 not found"
    assert [(c.tool, c.args) for c in next_round(seen, {})] == [("get_order", {"order_id": 70072})]
    assert next_round(f"{WRONG.question}\norder 70072 not found", {}) == first
    # The misread call is one of the calls a run makes, and the right reading follows it.
    right = Case("chain", 9, named=True)
    assert sorted(expected_calls(WRONG.question)) == sorted(
        [*expected_calls(right.question), '["get_order", {"order_id": 10070072}]']
    )


def test_the_ideal_model_corrects_a_misread_in_every_format() -> None:
    model = IdealShapeModel()
    failure = "An error occurred while running the tool. Please try again. Error: " + failure_of(
        WRONG
    )
    tools = [{"type": "function", "function": {"name": "get_order", "parameters": {}}}]
    user = {"role": "user", "content": WRONG.question}
    first = model.reply({"messages": [user], "tools": tools})
    assert [(c.call_id, c.arguments) for c in first.tool_calls] == [
        ("call_s1", {"order_id": 10_070_072})
    ]
    asked = {"role": "assistant", "tool_calls": [{"id": "call_s1"}]}
    answered = {"role": "tool", "tool_call_id": "call_s1", "content": failure}
    again = model.reply({"messages": [user, asked, answered], "tools": tools})
    # Made again under an id of its own; the error text is no result of s1.
    assert [(c.call_id, c.arguments) for c in again.tool_calls] == [
        ("call_s1_again", {"order_id": 70072})
    ]
    # A plan document: misread first, right once the failure is in the prompt.
    schema = plan_json_schema(["lookup"])
    body = {"response_format": {"type": "json_schema", "json_schema": {"schema": schema}}}
    plan = json.loads(model.reply({**body, "messages": [user]}).text or "")
    assert plan["steps"][0] == {"get_order": {"order_id": 10_070_072}}
    retold = {"role": "user", "content": f"{WRONG.question}\nFAILED NotFound: {failure}"}
    plan = json.loads(model.reply({**body, "messages": [retold]}).text or "")
    assert plan["steps"][0] == {"get_order": {"order_id": 70072}}


def test_the_join_replans_only_a_misread_it_is_shown() -> None:
    model = IdealShapeModel()
    labels = {"type": "object", "properties": {"choice": {"enum": ["finish", "replan"]}}}
    body = {"response_format": {"type": "json_schema", "json_schema": {"schema": labels}}}

    def decision(text: str) -> str:
        reply = model.reply({**body, "messages": [{"role": "user", "content": text}]})
        return str(json.loads(reply.text or "")["choice"])

    shown = f"User: {WRONG.question}\ns1 FAILED NotFound: {failure_of(WRONG)}\nDecision:"
    assert decision(shown) == "replan"
    assert decision(f"User: {WRONG.question}\ns1 done\nDecision:") == "finish"
    assert decision(f"User: {DIAMOND}\ns1 FAILED Timeout\nDecision:") == "finish"


def test_a_patch_holds_only_the_corrected_step_with_its_id() -> None:
    model = IdealShapeModel()
    wide = Case("4-wide", 9, named=True, wrong_once=True)
    schema = plan_json_schema(None, patch=True)  # (a patch reads no intent again)
    body = {"response_format": {"type": "json_schema", "json_schema": {"schema": schema}}}
    failed = f"{wide.question}\ns1 FAILED NotFound: {failure_of(wide)}"
    plan = json.loads(
        model.reply({**body, "messages": [{"role": "user", "content": failed}]}).text or ""
    )
    assert plan["steps"] == [{"id": "s1", "get_order": {"order_id": wide.order_ids[0]}}]
    # Only a replaced step: the answer written before stands, as the planner is told.
    assert "answer" not in plan and "intent" not in plan
