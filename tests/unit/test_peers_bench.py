"""`bench.peers`' questions and its check of each run's calls: an ideal model's rounds follow
the question's plan with resolved arguments, and a run that missed a call or called one
with other arguments is refused."""

from __future__ import annotations

import pytest

from bench import peer_fakes as fakes
from bench.peer_cases import Case, case_of, next_round, plan_of, result_of

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
