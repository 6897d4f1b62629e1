"""A side effect's amount in the currency it moves, its target of the kind it changes, and no
looked-up record standing in for the one asked (`schemas.plan.kinds`, from `TARGETS`)."""

from __future__ import annotations

import dataclasses

import pytest

from agentkeel.schemas.plan.asked import AMENDED, TARGETS, mentions
from agentkeel.schemas.tools import TOOLS
from agentkeel.sdk.decorator import ToolDefinitionError, tool
from tests.support.provenance_calls import call as _call
from tests.support.provenance_calls import moved as _moved
from tests.support.provenance_calls import refund as _refund


@pytest.mark.parametrize(
    ("words", "currency"),
    [
        ("$5", "$"),
        ("5$", "$"),
        ("5 dollars", "$"),
        ("5 bucks", "$"),
        ("US$5", "USD"),
        ("USD 5", "USD"),
        ("C$5", "CAD"),
        ("5€", "EUR"),
        ("€5", "EUR"),
        ("5 euros", "EUR"),
        ("£5", "GBP"),
        ("GBP 5", "GBP"),
        ("5 quid", "GBP"),
        ("¥500", "¥"),
        ("₹5", "INR"),
        ("500 cents", None),
        ("5.50", None),
    ],
)
def test_an_amount_carries_the_currency_it_is_written_in(words: str, currency: str | None) -> None:
    [amount] = [m for m in mentions(f"refund {words} please", symbol_after=True, rules=TARGETS)]
    assert amount.kind == "amount"
    assert amount.currency == currency


@pytest.mark.parametrize(
    ("text", "nouns"),
    [
        ("order 5903", ["order"]),
        ("order #5903", ["order"]),
        ("order no. 5903", ["order"]),
        ("orders 5903 and 4774", ["orders", "orders"]),
        ("item 1001 of order 5903", ["item", "order"]),
        ("on 5903", [None]),
    ],
)
def test_a_name_carries_the_noun_written_before_it(text: str, nouns: list[str | None]) -> None:
    found = mentions(text, symbol_after=True, rules=TARGETS)
    assert [m.noun for m in found] == nouns


@pytest.mark.parametrize("words", ["5€", "five euros", "EUR 5", "£5", "C$5", "5 quid"])
def test_an_amount_in_another_currency_is_not_asked_of_a_dollar_tool(words: str) -> None:
    origins = _call(f"refund {words} on order 5903", [_refund(5903, 500)], _moved(5903, 500))
    assert not origins["amount_cents"].trusted, origins


@pytest.mark.parametrize("words", ["$5", "5$", "five dollars", "US$5", "USD 5", "500 cents"])
def test_an_amount_in_the_tools_currency_is_asked(words: str) -> None:
    origins = _call(f"refund {words} on order 5903", [_refund(5903, 500)], _moved(5903, 500))
    assert all(o.trusted for o in origins.values()), origins


def test_a_foreign_amount_says_why() -> None:
    origins = _call("refund 5€ on order 5903", [_refund(5903, 500)], _moved(5903, 500))
    assert "EUR" in origins["amount_cents"].says and "USD" in origins["amount_cents"].says


def test_currencies_are_read_only_where_the_tool_says_its_own_and_the_run_reads_them() -> None:
    """A tool without `amount_currency`, or a run recorded before `TARGETS`, reads "5€" as
    500 cents, as before."""
    unknown = {**TOOLS}
    unknown["create_refund"] = dataclasses.replace(TOOLS["create_refund"], amount_currency=None)
    euros = ("refund 5€ on order 5903", [_refund(5903, 500)], _moved(5903, 500))
    assert all(o.trusted for o in _call(*euros, tools=unknown).values())
    assert all(o.trusted for o in _call(*euros, rules=AMENDED).values())


def test_a_number_said_to_be_something_else_is_no_target() -> None:
    question = "refund $5 for item 1001 on order 5903"
    wrong = _call(question, [_refund(1001, 500)], _moved(1001, 500))
    assert not all(o.trusted for o in wrong.values()), wrong
    # The older reading took it; a replay of a run recorded with it still does.
    older = _call(question, [_refund(1001, 500)], _moved(1001, 500), rules=AMENDED)
    assert all(o.trusted for o in older.values()), older
    right = _call(question, [_refund(5903, 500)], _moved(5903, 500))
    assert all(o.trusted for o in right.values()), right


def test_names_without_a_noun_or_of_a_paraphrased_noun_still_bind() -> None:
    """Only a name said to be something else is dropped: "purchase 5903" and a list's
    second id stay targets."""
    for question, order in [
        ("refund $5 on purchase 5903", 5903),
        ("refund $5 each on orders 5903 and 4774", 4774),
        ("please refund $5 on 5903", 5903),
    ]:
        origins = _call(question, [_refund(order, 500)], _moved(order, 500))
        assert all(o.trusted for o in origins.values()), (question, origins)


LIST_ORDERS = {"id": "s1", "tool": "list_orders", "args": {"customer_id": 17}}


def test_a_looked_up_record_may_not_stand_in_for_the_one_asked() -> None:
    """The customer's own orders are trusted; another of them is not the order asked."""
    steps = [LIST_ORDERS, _refund("$s1.orders.0.order_id", 500)]
    question = "refund $5 on order 5903"
    other = _call(question, steps, _moved(4774, 500), subject="17")
    assert not other["order_id"].trusted, other
    assert "looked up" in other["order_id"].says and "5903" in other["order_id"].says
    asked = _call(question, steps, _moved(5903, 500), subject="17")
    assert all(o.trusted for o in asked.values()), asked
    # A request that names no order lets the lookup choose it.
    unnamed = _call("refund $5 on my last order", steps, _moved(4774, 500), subject="17")
    assert unnamed["order_id"].trusted, unnamed
    # Runs recorded before `TARGETS` took the lookup, as they did.
    before = _call(question, steps, _moved(4774, 500), subject="17", rules=AMENDED)
    assert before["order_id"].trusted


def test_a_currency_is_an_iso_code_of_a_tools_amount() -> None:
    with pytest.raises(ToolDefinitionError, match="ISO 4217"):
        tool(side_effect=True, amount_arg="cents", amount_currency="dollars")
    with pytest.raises(ToolDefinitionError, match="name amount_arg"):
        tool(side_effect=True, amount_currency="USD")


@pytest.mark.parametrize(
    "question",
    [
        "refund $5 on 5903",
        "refund $5 on #5903",
        "refund $5 on order ID 5903",
        "refund $5 on order id: 5903",
        "refund $5 on order-5903",
        "refund $5 on order (5903)",
        "refund $5 on purchase 5903",
        "My order 5903 arrived broken. Please refund $5.",
    ],
)
def test_no_looked_up_record_stands_in_for_one_the_request_names_however_written(
    question: str,
) -> None:
    steps = [LIST_ORDERS, _refund("$s1.orders.1.order_id", 500)]
    other = _call(question, steps, _moved(4774, 500), subject="17")
    assert not other["order_id"].trusted, other
    named = _call(question, steps, _moved(5903, 500), subject="17")
    assert named["order_id"].trusted, named


def test_small_numbers_without_the_targets_noun_name_no_target() -> None:
    steps = [LIST_ORDERS, _refund("$s1.orders.0.order_id", 500)]
    question = "refund $5 on my order from 3 days ago"
    assert _call(question, steps, _moved(4774, 500), subject="17")["order_id"].trusted


@pytest.mark.parametrize(
    "item",
    ["item ID 1001", "item id: 1001", "item-1001", "item (1001)", "SKU-1001", "orderline 1001"],
)
def test_a_number_said_to_be_something_else_however_written_is_no_target(item: str) -> None:
    question = f"refund $5 for {item} on order 5903"
    wrong = _call(question, [_refund(1001, 500)], _moved(1001, 500))
    assert not all(o.trusted for o in wrong.values()), wrong


@pytest.mark.parametrize(
    "words",
    ["R$5", "MX$5", "NT$5", "$5 CAD", "5$ CAD", "$5 AUD", "5 Canadian dollars", "5.50 pesos",
     "MXN 5", "BRL 5", "5.50 Swiss francs", "\uffe15"],
)  # fmt: skip
def test_more_foreign_amounts_are_not_asked_of_a_dollar_tool(words: str) -> None:
    amount = 550 if "5.50" in words else 500
    origins = _call(f"refund {words} on order 5903", [_refund(5903, amount)], _moved(5903, amount))
    assert not origins["amount_cents"].trusted, origins
