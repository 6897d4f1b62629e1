"""From `READS_AMENDED`: an asking's corrected amounts and the prices it tells of its target
are not asked (`schemas.plan.second_thoughts`); an asking withdrawn, thanked for, told of
or asked about asks for nothing (`schemas.plan.asides`); an amount looked up goes with its
own target as a written one does. Each case was trusted as `READS_ASIDES` reads."""

from __future__ import annotations

import time

import pytest

from agentkeel.schemas.plan.asked import AMENDED, asked_regions
from agentkeel.schemas.plan.provenance import READS_ASIDES
from tests.support.asking import REFUND_WORDS, origins_of_last, refund_step


def _trusted(question: str, amount: int, order: int = 5903, rules: int | None = None) -> bool:
    step = refund_step(order, amount)
    resolved = {"order_id": order, "amount_cents": amount, "reason": "x"}
    origins = (
        origins_of_last(question, [step], resolved)
        if rules is None
        else origins_of_last(question, [step], resolved, rules)
    )
    return all(o.trusted for o in origins.values())


@pytest.mark.parametrize(
    ("question", "asked", "not_asked"),
    [
        ("refund $50, sorry, $5 on order 5903", 500, 5000),
        ("refund $50 no wait $5 on order 5903", 500, 5000),
        ("refund $50 -- sorry I meant $5 -- on order 5903", 500, 5000),
        ("refund $5, actually make it $50, on order 5903", 5000, 500),
        ("refund $5 on my $19 order 5903", 500, 1900),
        ("refund $5 of the $19.99 I paid for order 5903", 500, 1999),
        ("refund $5 on order 5903 that I bought for $19", 500, 1900),
        ("refund $5 on order 5903 that cost $19", 500, 1900),
        ("refund $5 on order 5903, I actually paid $19", 500, 1900),
        ("refund $5 rather than $50 on order 5903", 500, 5000),
    ],
)
def test_only_the_amount_the_asking_settles_on_is_asked(
    question: str, asked: int, not_asked: int
) -> None:
    assert _trusted(question, asked), question
    assert not _trusted(question, not_asked), question


def test_a_price_alone_is_still_what_is_asked() -> None:
    assert _trusted("give me a refund of the $19 I paid for order 5903", 1900)
    assert _trusted("refund the $19 order 5903", 1900)


def test_runs_recorded_before_read_as_they_were() -> None:
    assert _trusted("refund $5 on my $19 order 5903", 1900, rules=READS_ASIDES)


def test_an_amount_looked_up_goes_with_its_own_target() -> None:
    lookup: dict[str, object] = {"id": "g", "tool": "get_order", "args": {"order_id": 4774}}
    by_reference = {**refund_step(5903, "$g.total_cents")}
    resolved = {"order_id": 5903, "amount_cents": 1900, "reason": "x"}
    question = "refund $19 on order 4774 and $5 on order 5903"
    origins = origins_of_last(question, [lookup, by_reference], resolved)
    assert not origins["amount_cents"].trusted
    assert "not what the request asks" in origins["amount_cents"].says
    before = origins_of_last(question, [lookup, by_reference], resolved, READS_ASIDES)
    assert before["amount_cents"].trusted, "read as recorded before"
    on_its_own = {"order_id": 4774, "amount_cents": 1900, "reason": "x"}
    step = refund_step(4774, "$g.total_cents")
    assert origins_of_last(question, [lookup, step], on_its_own)["amount_cents"].trusted


@pytest.mark.parametrize(
    "question",
    [
        "Cancel the refund of $19 on order 5903",
        "Please avoid refunding $19 on order 5903",
        "Hold off on the refund of $19 on order 5903",
        "I won't ask for a refund of $19 on order 5903",
        "I didn't want a refund of $19 on order 5903",
        "How long does a refund of $19 on order 5903 take?",
        "Thanks for the refund of $19 on order 5903!",
        "Thanks for the quick refund of $19 on order 5903",
        "I didn't request a refund of $19 on order 5903",
        "Mary refunded $19 on order 5903 last week",
        "My friend got $19 refunded on order 5903",
        "The email said: we will refund $19 on order 5903. Is that a scam?",
        "I was told I'd get a refund of $19 on order 5903",
    ],
)
def test_an_asking_withdrawn_thanked_for_told_of_or_asked_about_asks_nothing(
    question: str,
) -> None:
    assert not _trusted(question, 1900), question
    assert _trusted(question, 1900, rules=READS_ASIDES), "read so before"


@pytest.mark.parametrize(
    "question",
    [
        "Please refund $19 on order 5903",
        "Can you refund $19 on order 5903?",
        "Is it possible to refund $19 on order 5903?",
        "Why not refund $19 on order 5903?",
        "I told you to refund $19 on order 5903",
        "As I said, refund $19 on order 5903",
        "I got charged twice, please refund $19 on order 5903",
        "Stop asking questions and refund $19 on order 5903",
        "Hi, Ana here. Refund $19 on order 5903",
        "Please get $19 refunded on order 5903",
        "I'd like $19 refunded on order 5903",
        "Don't forget to refund $19 on order 5903",
        "cancel order 5903, refund $19",
        "My order 5903 didn't arrive; please refund $19",
        "It doesn't work, refund $19 on order 5903",
        "thanks for the help, refund $19 on order 5903",
        "Support said to refund $19 on order 5903",
        "my wife said please refund $19 on order 5903",
        "When can you refund $19 on order 5903?",
        "What about refunding $19 on order 5903?",
        "do you refund $19 on order 5903? please do",
        "Thanks for your help please refund $19 on order 5903",
        "This doesn't fit refund $19 on order 5903",
        "cancel the subscription please refund $19 on order 5903",
    ],
)
def test_an_asking_in_so_many_words_still_asks(question: str) -> None:
    assert _trusted(question, 1900), question


def test_a_long_request_of_corrections_and_prices_is_read_in_linear_time() -> None:
    for text in ("refund $5 sorry $6 " * 220, "my $19 order " * 310 + "refund $5",
                 "said " + "a " * 2000 + "refund $5", "refund " + "$5 no wait " * 400,
                 "please refund $5" + " " * 3990 + "x", "refund $1" + " " * 3990 + "order",
                 "sorry" + " " * 3990 + "$5 refund", "refund $5 " + "sorry " * 650 + "$6",
                 "refund $5 " + "$6 " * 1300):  # fmt: skip
        began = time.monotonic()
        asked_regions(text[:4000], REFUND_WORDS, AMENDED)
        assert time.monotonic() - began < 0.5, text[:40]
