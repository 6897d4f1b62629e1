"""The canonical reading of a question: what the reading tier compares instead of wording."""

from __future__ import annotations

import pytest

from agentkeel.activities.cache.reading import read

SAME = [
    ("Do you offer free shipping?", "is shipping free"),
    ("Cancel order 4821", "I want to cancel order 4821"),
    ("Refund $12.50 on order 2210", "issue a refund of 12.50 USD for order 2210"),
    ("Are gift cards refundable?", "can I get my money back for a gift card"),
    ("Can I return a gift without a receipt?", "returning a gift with no receipt, possible?"),
    # About no order in particular, shipping and delivery are one service...
    ("How long does delivery take?", "how long does shipping take"),
    # ...about one parcel, where it is and its tracking are one answer.
    ("Where is my package TRK0000001003?", "track package TRK0000001003"),
    ("What's the return window?", "how many days do I have to return something"),
]

DIFFERENT = [
    ("Where is order 1001?", "where is order 1002"),
    ("Do you ship to Singapore?", "do you ship to Sydney"),
    ("What is the warranty on headphones?", "what is the warranty on kettles"),
    ("Is SKU-00012 in stock?", "is SKU-00012 in stock in Chicago"),
    ("Refund order 1003", "don't refund order 1003"),
    ("Refund half of order 1001", "refund all of order 1001"),
    ("Can I cancel my order after it ships?", "can I cancel my order before it ships"),
    # About one order, shipped and delivered are different states.
    ("Has order 1001 shipped?", "has order 1001 been delivered"),
    ("Where is order 1001?", "cancel order 1001"),
    ("Tell me when order 1002 ships", "has order 1002 shipped"),
    ("How do I cancel a refund?", "how do I request a refund"),
    # Asking about an action on an order is not ordering it.
    ("Refund order 1003", "can I get a refund for order 1003?"),
    ("Do you offer free shipping on orders over $50?", "free shipping on orders under $50?"),
    ("Can I ship from Berlin to Paris?", "can I ship from Paris to Berlin?"),
]


@pytest.mark.parametrize(
    "question",
    ["Refund order 1001 and cancel order 1002", "Refund $5 or $10 on order 1001"],
)
def test_two_values_of_one_kind_have_no_reading(question: str) -> None:
    assert read(question) is None, "a set of facts cannot tell their roles apart"


@pytest.mark.parametrize(("asked", "stored"), SAME)
def test_paraphrases_read_the_same(asked: str, stored: str) -> None:
    mine, theirs = read(asked), read(stored)
    assert mine is not None
    assert mine == theirs
    assert theirs is not None
    assert mine.digest() == theirs.digest()


@pytest.mark.parametrize(("asked", "stored"), DIFFERENT)
def test_other_requests_read_differently(asked: str, stored: str) -> None:
    mine, theirs = read(asked), read(stored)
    assert mine != theirs
    if mine is not None and theirs is not None:
        assert mine.digest() != theirs.digest()


@pytest.mark.parametrize("question", ["", "   ", "1001", "please help", "?!?", "the it a"])
def test_questions_with_nothing_to_compare_have_no_reading(question: str) -> None:
    assert read(question) is None


@pytest.mark.parametrize(
    "question",
    ["x" * 100_000, "ÉCOLE naïve café — 🚚 ship", "order\x00 1001\n\tship", "'''''' s's's"],
)
def test_any_text_reads_without_error(question: str) -> None:
    reading = read(question)
    assert reading is None or reading.digest()


def test_unknown_words_are_kept_not_folded() -> None:
    reading = read("Do you ship to Reykjavik?")
    assert reading is not None
    assert "w:reykjavik" in reading.concepts
