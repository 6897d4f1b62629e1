"""Reading a request as people write it, and binding a side effect to what it asks."""

from __future__ import annotations

import dataclasses

import pytest

from agentkeel.schemas.plan.asked import asked_regions
from agentkeel.schemas.plan.model import Plan
from agentkeel.schemas.plan.provenance import READS_AS_ASKED, Provenance, TrustedFacts
from agentkeel.schemas.tools import TOOLS

REFUND_WORDS = ("refund", "money back", "reimburs")


def _call(question: str, steps: list[dict[str, object]], resolved: dict[str, object]) -> dict:
    plan = Plan.model_validate({"steps": steps})
    facts = TrustedFacts(question, rules=READS_AS_ASKED)
    provenance = Provenance({s.id: s for s in plan.steps}, TOOLS, facts)
    return provenance.of_call(plan.steps[-1], resolved)


def _refund(order: object, amount: object) -> dict[str, object]:
    args = {"order_id": order, "amount_cents": amount, "reason": "x"}
    return {"id": "r", "tool": "create_refund", "args": args}


LOOKUP: dict[str, object] = {"id": "s1", "tool": "get_order", "args": {"order_id": 5903}}


@pytest.mark.parametrize(
    "words",
    ["five dollars", "5$", "5€", "5 €", "USD 5", "500 cents", "$5", "5 euros", "Five Dollars"],
)
def test_amounts_are_read_as_people_write_them(words: str) -> None:
    facts = TrustedFacts(f"refund {words} on order 5903", rules=READS_AS_ASKED)
    assert facts.numbers("amount") == {500} and facts.numbers("identity") == {5903}


@pytest.mark.parametrize("words", ["five dollars", "5$", "5€"])
def test_runs_recorded_before_read_as_they_did(words: str) -> None:
    assert TrustedFacts(f"refund {words} on order 5903").numbers("amount") == set()


def test_twenty_five_and_a_hundred_in_words() -> None:
    facts = TrustedFacts("refund twenty-five dollars, or a hundred euros", rules=READS_AS_ASKED)
    assert facts.numbers("amount") == {2500, 10_000}


def test_what_is_asked_is_not_what_is_mentioned() -> None:
    asked = "my other order 4774 cost $26.97 ... refund $5 on order 5903"
    [region] = asked_regions(asked, REFUND_WORDS)
    assert (region.names, region.amounts) == ({5903}, {500})
    [before] = asked_regions("For order 5903, refund $5", REFUND_WORDS)
    assert (before.names, before.amounts) == ({5903}, {500})
    [listed] = asked_regions("refund order 7001 in parts: $1.99, $1.98 and $1.97", REFUND_WORDS)
    assert listed.amounts == {199, 198, 197}
    for tail in (", my order 4774 cost $26.97", " and my other order 4774 cost $26.97"):
        [cut] = asked_regions(f"refund $5 on order 5903{tail}", REFUND_WORDS)
        assert (cut.names, cut.amounts) == ({5903}, {500}), tail
    [both] = asked_regions("refund $5 and $3 on order 5903", REFUND_WORDS)
    assert (both.names, both.amounts) == ({5903}, {500, 300})
    for numbered in ("refund $5 on order no. 5903", "refund $5 on order No. 5903"):
        [region] = asked_regions(numbered, REFUND_WORDS)  # "no." ends no sentence
        assert (region.names, region.amounts) == ({5903}, {500}), numbered
    [two] = asked_regions("Order 4774 arrived. Refund $5 on order 5903.", REFUND_WORDS)
    assert (two.names, two.amounts) == ({5903}, {500})


def test_a_mentioned_pair_is_not_trusted_and_the_asked_pair_is() -> None:
    asked = "my other order 4774 cost $26.97 ... refund $5 on order 5903"
    wrong = _call(asked, [_refund(4774, 2697)], {"order_id": 4774, "amount_cents": 2697})
    assert not wrong["amount_cents"].trusted and "not what the request asks" in (
        wrong["amount_cents"].says
    )
    mixed = _call(asked, [_refund(4774, 500)], {"order_id": 4774, "amount_cents": 500})
    assert not mixed["amount_cents"].trusted
    right = _call(asked, [_refund(5903, 500)], {"order_id": 5903, "amount_cents": 500})
    assert all(o.trusted for o in right.values()), right


def test_an_amount_from_a_lookup_when_the_request_named_none_is_shown_not_trusted() -> None:
    steps = [LOOKUP, _refund("$s1.order_id", "$s1.total_cents")]
    # "five dollars" was not read before: the order's total stood in for it.
    full = _call("refund order 5903", steps, {"order_id": 5903, "amount_cents": 31898})
    assert not full["amount_cents"].trusted
    assert "names no amount" in full["amount_cents"].says and "get_order" in (
        full["amount_cents"].says
    )
    five = _call("refund five dollars on order 5903", steps, {"amount_cents": 31898})
    assert not five["amount_cents"].trusted


def test_a_side_effect_without_identity_arguments_has_every_argument_checked() -> None:
    tools = dict(TOOLS)
    tools["delete_note"] = dataclasses.replace(
        TOOLS["create_refund"], name="delete_note", identity_args=(), amount_arg=None
    )
    plan = Plan.model_validate(
        {"steps": [{"id": "d", "tool": "delete_note", "args": {"note": "b"}}]}
    )
    facts = TrustedFacts("refund $5 on order 5903", rules=READS_AS_ASKED)
    origins = Provenance({s.id: s for s in plan.steps}, tools, facts).of_effect(plan.steps[0])
    assert not origins["note"].trusted
    old = TrustedFacts("refund $5 on order 5903")
    assert Provenance({s.id: s for s in plan.steps}, tools, old).of_effect(plan.steps[0]) == {}
