"""Reading a request as people write it, and binding a side effect to what it asks."""

from __future__ import annotations

import dataclasses

import pytest

from agentkeel.schemas.plan.asked import asked_regions
from agentkeel.schemas.plan.model import Plan
from agentkeel.schemas.plan.provenance import (
    READS_AS_ASKED,
    READS_ASIDES,
    Provenance,
    TrustedFacts,
)
from agentkeel.schemas.tools import TOOLS
from tests.support.asking import REFUND_WORDS, origins_of_last, refund_step

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
    wrong = origins_of_last(
        asked, [refund_step(4774, 2697)], {"order_id": 4774, "amount_cents": 2697}
    )
    assert not wrong["amount_cents"].trusted and "not what the request asks" in (
        wrong["amount_cents"].says
    )
    mixed = origins_of_last(
        asked, [refund_step(4774, 500)], {"order_id": 4774, "amount_cents": 500}
    )
    assert not mixed["amount_cents"].trusted
    right = origins_of_last(
        asked, [refund_step(5903, 500)], {"order_id": 5903, "amount_cents": 500}
    )
    assert all(o.trusted for o in right.values()), right


def test_an_amount_from_a_lookup_when_the_request_named_none_is_shown_not_trusted() -> None:
    steps = [LOOKUP, refund_step("$s1.order_id", "$s1.total_cents")]
    # "five dollars" was not read before: the order's total stood in for it.
    full = origins_of_last("refund order 5903", steps, {"order_id": 5903, "amount_cents": 31898})
    assert not full["amount_cents"].trusted
    assert "names no amount" in full["amount_cents"].says and "get_order" in (
        full["amount_cents"].says
    )
    five = origins_of_last("refund five dollars on order 5903", steps, {"amount_cents": 31898})
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


MENTIONED = "order 4774 cost $26.97"
ASIDES = [
    f"refund $5 on order 5903 and {MENTIONED}",
    "You refunded $26.97 on order 4774 last week. Now refund $5 on order 5903.",
    f"refund $5 on order 5903 ({MENTIONED})",
    f"refund $5 on order 5903 - {MENTIONED}",
    f"refund $5 on order 5903 \u2014 my {MENTIONED}",
    f"refund $5 on order 5903: my other {MENTIONED}",
    f"refund $5 on order 5903 since {MENTIONED}",
    f"refund $5 on order 5903 as {MENTIONED}",
    "refund $5 on order 5903 instead of $26.97 on order 4774",
    "refund $5 on order 5903 rather than $26.97 on order 4774",
    "Don't refund $26.97 on order 4774; refund $5 on order 5903",
    "Never refund $26.97 on order 4774. Please refund $5 on order 5903.",
]


@pytest.mark.parametrize("asked", ASIDES)
def test_an_aside_a_past_refund_or_a_refusal_is_not_asked(asked: str) -> None:
    regions = asked_regions(asked, REFUND_WORDS)
    assert {n for r in regions for n in r.names} == {5903}, regions
    assert {a for r in regions for a in r.amounts} == {500}, regions
    wrong = origins_of_last(
        asked, [refund_step(4774, 2697)], {"order_id": 4774, "amount_cents": 2697}
    )
    assert not all(o.trusted for o in wrong.values()), asked
    right = origins_of_last(
        asked, [refund_step(5903, 500)], {"order_id": 5903, "amount_cents": 500}
    )
    assert all(o.trusted for o in right.values()), (asked, right)


def test_runs_recorded_before_the_asides_reading_keep_theirs() -> None:
    """A run recorded under `provenance-asked-v1` replays its decisions as they were made."""
    asked = f"refund $5 on order 5903 and {MENTIONED}"
    resolved: dict[str, object] = {"order_id": 4774, "amount_cents": 2697}
    before = origins_of_last(asked, [refund_step(4774, 2697)], resolved, rules=READS_AS_ASKED)
    assert all(o.trusted for o in before.values())
    facts = TrustedFacts("refund 5,50 € on order 5903", rules=READS_AS_ASKED)
    assert facts.numbers("amount") == {5000}  # the decimal comma was not read then


def test_each_amount_goes_with_its_own_target() -> None:
    asked = "refund $5 on order 5903 and $26.97 on order 4774"
    swapped = origins_of_last(
        asked, [refund_step(5903, 2697)], {"order_id": 5903, "amount_cents": 2697}
    )
    assert not swapped["amount_cents"].trusted
    for order, cents in ((5903, 500), (4774, 2697)):
        paired = origins_of_last(
            asked, [refund_step(order, cents)], {"order_id": order, "amount_cents": cents}
        )
        assert all(o.trusted for o in paired.values()), (order, paired)
    # One target, several amounts: each is asked on it.
    both = "refund $5 and $3 on order 5903"
    three = origins_of_last(both, [refund_step(5903, 300)], {"order_id": 5903, "amount_cents": 300})
    assert all(o.trusted for o in three.values())


def test_a_mentioned_target_reached_by_a_lookup_is_still_not_asked() -> None:
    asked = f"my other {MENTIONED} ... refund $5 on order 5903"
    lookup: dict[str, object] = {"id": "s1", "tool": "get_order", "args": {"order_id": 4774}}
    by_reference = origins_of_last(
        asked,
        [lookup, refund_step("$s1.order_id", 500)],
        {"order_id": 4774, "amount_cents": 500},
    )
    assert not all(o.trusted for o in by_reference.values()), by_reference
    lookup = {"id": "s1", "tool": "get_order", "args": {"order_id": 5903}}
    asked_one = origins_of_last(
        asked, [lookup, refund_step("$s1.order_id", 500)], {"order_id": 5903, "amount_cents": 500}
    )
    assert all(o.trusted for o in asked_one.values()), asked_one


@pytest.mark.parametrize(
    ("words", "cents"),
    [
        ("5,50 €", 550),
        ("EUR 5,50", 550),
        ("one hundred and five dollars", 10_500),
        ("$5k", 500_000),
        ("5 quid", 500),
        ("₹5", 500),
    ],
)
def test_more_ways_of_writing_an_amount(words: str, cents: int) -> None:
    facts = TrustedFacts(f"refund {words} on order 5903", rules=READS_ASIDES)
    assert facts.numbers("amount") == {cents} and facts.numbers("identity") == {5903}


def test_a_list_written_with_commas_is_two_numbers_not_money() -> None:
    facts = TrustedFacts("look at orders 5,50 please", rules=READS_ASIDES)
    assert facts.numbers("amount") == set() and facts.numbers("identity") == {5, 50}


@pytest.mark.parametrize(
    ("asked", "kept"),
    [
        ("keep dinner; delete lunch", "dinner"),
        ("Don't delete dinner, delete lunch", "dinner"),
        ("never delete dinner. delete lunch", "dinner"),
        ("I deleted dinner yesterday, now delete lunch", "dinner"),
    ],
)
def test_a_target_written_as_text_must_be_in_what_is_asked(asked: str, kept: str) -> None:
    tools = dict(TOOLS)
    tools["delete_note"] = dataclasses.replace(
        TOOLS["create_refund"], name="delete_note", identity_args=(), amount_arg=None,
        asked_by=("delete",),
    )  # fmt: skip

    def origins(note: str) -> dict:
        plan = Plan.model_validate(
            {"steps": [{"id": "d", "tool": "delete_note", "args": {"note": note}}]}
        )
        facts = TrustedFacts(asked, rules=READS_ASIDES)
        provenance = Provenance({s.id: s for s in plan.steps}, tools, facts)
        return provenance.of_call(plan.steps[0], {"note": note})

    refused = origins(kept)["note"]
    assert not refused.trusted and "not asked for" in refused.says, refused
    assert origins("lunch")["note"].trusted
