"""The `provenance-asked-v2` reading on the ways people ask: passive and idiomatic askings
asked, asides and refusals not, one amount for several targets, text targets, and a long
request read in linear time (`schemas.plan.asides`)."""

from __future__ import annotations

import dataclasses
import time

import pytest

from agentkeel.schemas.plan.asked import asked_regions
from agentkeel.schemas.plan.model import Plan
from agentkeel.schemas.plan.provenance import READS_ASIDES, Provenance, TrustedFacts
from agentkeel.schemas.tools import TOOLS
from tests.support.asking import REFUND_WORDS, origins_of_last, refund_step

ASKED_AS_PEOPLE_ASK = [
    "I'd like $5 refunded on order 5903",
    "Please get order 5903 refunded $5",
    "Can I get reimbursed $5 for order 5903?",
    "order 5903 should be refunded $5",
    "Don't forget to refund $5 on order 5903",
    "Why not refund $5 on order 5903?",
    "refund: $5 on order 5903 which was damaged",
    "refund order 5903: it was $5",
    "refund the shipping on order 5903: it cost $5",
    "refund $5 on the order (5903)",
    "refund $5 since order 5903 arrived broken",
    "refund $5 on order 5903 as store credit",
    "For order 5903, refund $5",
]


@pytest.mark.parametrize("asked", ASKED_AS_PEOPLE_ASK)
def test_a_request_asked_as_people_ask_it_is_trusted(asked: str) -> None:
    right = origins_of_last(
        asked, [refund_step(5903, 500)], {"order_id": 5903, "amount_cents": 500}
    )
    assert all(o.trusted for o in right.values()), (asked, right)


@pytest.mark.parametrize(
    "asked",
    [
        "Don\u2019t refund $26.97 on order 4774; refund $5 on order 5903",
        "Instead of refunding $26.97 on order 4774, refund $5 on order 5903",
        "Do not under any circumstances refund $26.97 on order 4774. refund $5 on order 5903",
        "no refund of $26.97 on order 4774 please, refund $5 on order 5903",
        "you already issued a refund of $26.97 on order 4774. refund $5 on order 5903",
        "refund $5 on order 5903 which is cheaper than order 4774 at $26.97",
        "refund $5 on order 5903 / order 4774 cost $26.97",
        "refund $5 on order 5903 & order 4774 cost $26.97",
        "refund $5 on order 5903 plus order 4774 cost $26.97",
        "refund $5 on order 5903 after order 4774 cost $26.97",
    ],
)
def test_more_asides_and_refusals_are_not_asked(asked: str) -> None:
    wrong = origins_of_last(
        asked, [refund_step(4774, 2697)], {"order_id": 4774, "amount_cents": 2697}
    )
    assert not all(o.trusted for o in wrong.values()), asked


def test_one_amount_for_each_of_several_targets() -> None:
    asked = "refund $5 each on orders 5903 and 4774"
    for order in (5903, 4774):
        each = origins_of_last(
            asked, [refund_step(order, 500)], {"order_id": order, "amount_cents": 500}
        )
        assert all(o.trusted for o in each.values()), order


def test_a_long_request_is_read_in_linear_time() -> None:
    """The reading runs in workflow code: a 4000-character request of asking words and
    cuts must not come near Temporal's 2 s deadlock detector (it took 16 s with a
    lookahead that scanned each sentence once per cut)."""
    for text in (("refund and " * 360)[:3990] + " was", ("please refund and " * 220)[:3990]):
        began = time.monotonic()
        asked_regions(text, REFUND_WORDS)
        assert time.monotonic() - began < 1.0


def test_a_text_target_with_a_number_in_words_is_found_where_it_is_asked() -> None:
    tools = dict(TOOLS)
    tools["delete_note"] = dataclasses.replace(
        TOOLS["create_refund"], name="delete_note", identity_args=(), amount_arg=None,
        asked_by=("delete",),
    )  # fmt: skip
    plan = Plan.model_validate(
        {"steps": [{"id": "d", "tool": "delete_note", "args": {"note": "five things"}}]}
    )
    facts = TrustedFacts("delete the note five things", rules=READS_ASIDES)
    origins = Provenance({s.id: s for s in plan.steps}, tools, facts).of_call(
        plan.steps[0], {"note": "five things"}
    )
    assert origins["note"].trusted, origins
    odd = origins_of_last(
        "refund $5 on order 5903", [refund_step("²", 500)], {"order_id": "²", "amount_cents": 500}
    )
    assert not odd["order_id"].trusted
