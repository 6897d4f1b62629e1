"""Askings taken back, dropped or corrected, and a side effect without asking words refused
by the verbs of its name (`schemas.plan.asked`, `schemas.plan.asides`, from `TARGETS`)."""

from __future__ import annotations

import dataclasses

import pytest

from agentkeel.schemas.plan.asked import AMENDED, TARGETS, asked_regions
from agentkeel.schemas.tools import TOOLS
from tests.support.provenance_calls import call as _call
from tests.support.provenance_calls import moved as _moved
from tests.support.provenance_calls import refund as _refund


@pytest.mark.parametrize(
    ("question", "asked"),
    [
        ("forget the refund of $50 on order 5903", []),
        ("forget about refunding order 5903", []),
        ("scratch the refund on order 4774, refund $5 on order 5903", [(5903, 500)]),
        ("don't forget to refund $5 on order 5903", [(5903, 500)]),
        ("refund $50 oops $5 on order 5903", [(5903, 500)]),
        ("refund $50, my bad, $5 on order 5903", [(5903, 500)]),
        ("refund $50 or rather $5 on order 5903", [(5903, 500)]),
        ("refund $50 er $5 on order 5903", [(5903, 500)]),
        ("refund $50 on order 5903, skip the shipping fee", [(5903, 5000)]),
    ],
)
def test_dropped_askings_and_more_corrections_are_read(question: str, asked: list) -> None:
    regions = asked_regions(question, ("refund",), TARGETS)
    assert [(n, a) for r in regions for n in sorted(r.names) for a in sorted(r.amounts)] == asked


_NOTES = dataclasses.replace(
    TOOLS["create_refund"],
    name="notes_delete_note",
    asked_by=(),
    identity_args=(),
    amount_arg=None,
    amount_currency=None,
)
"""A side effect as an MCP server's comes: no asking words, no identity arguments."""


@pytest.mark.parametrize(
    ("question", "title", "trusted"),
    [
        ("Don't delete note lunch. Delete note dinner.", "lunch", False),
        ("Don't delete note lunch. Delete note dinner.", "dinner", True),
        ("please remove dinner, never delete lunch", "lunch", False),
        ("forget about deleting lunch; delete dinner", "lunch", False),
        ("get rid of lunch", "lunch", True),
    ],
)
def test_a_tool_without_asking_words_reads_its_verbs_refused(
    question: str, title: str, trusted: bool
) -> None:
    step = {"id": "d", "tool": _NOTES.name, "args": {"title": title}}
    tools = {**TOOLS, _NOTES.name: _NOTES}
    origins = _call(question, [step], {"title": title}, tools=tools)
    assert origins["title"].trusted is trusted, origins
    # Before `TARGETS` a refusal of a tool without asking words was not read.
    assert _call(question, [step], {"title": title}, tools=tools, rules=AMENDED)["title"].trusted


def test_each_text_of_a_list_is_bound_too() -> None:
    """An MCP tool's targets often come as a list (`entityNames`)."""
    step = {"id": "d", "tool": _NOTES.name, "args": {"names": ["dinner", "lunch"]}}
    tools = {**TOOLS, _NOTES.name: _NOTES}
    question = "Don't delete lunch. Delete dinner."
    both = _call(question, [step], {"names": ["dinner", "lunch"]}, tools=tools)
    assert not both["names"].trusted and "lunch" in both["names"].says, both
    dinner = {**step, "args": {"names": ["dinner"]}}
    assert _call(question, [dinner], {"names": ["dinner"]}, tools=tools)["names"].trusted


@pytest.mark.parametrize(
    "question",
    [
        "refund $5 on order 5903 and my balance should be $45",
        "refund $5 on order 5903, then my total should be $45",
        "refund $5 on order 5903, not that $50 matters",
    ],
)
def test_a_later_amount_is_no_correction_unless_only_a_correction_stands_between(
    question: str,
) -> None:
    asked = _call(question, [_refund(5903, 500)], _moved(5903, 500))
    assert all(o.trusted for o in asked.values()), asked
    later = _call(question, [_refund(5903, 4500)], _moved(5903, 4500))
    assert not later["amount_cents"].trusted, later


@pytest.mark.parametrize(
    "question",
    [
        "refund $50 on order 5903. Actually, forget it.",
        "refund $50 on order 5903. never mind.",
        "refund $50 on order 5903 - never mind",
        "never-mind the refund of $50 on order 5903",
        "scrap the refund of $50 on order 5903",
        "disregard the request for a refund of $50 on order 5903",
        "ignore my previous request to refund $50 on order 5903",
    ],
)
def test_an_asking_taken_back_or_dropped_asks_nothing(question: str) -> None:
    origins = _call(question, [_refund(5903, 5000)], _moved(5903, 5000))
    assert not all(o.trusted for o in origins.values()), origins


@pytest.mark.parametrize(
    "question",
    [
        "forget the coupon - refund $5 on order 5903",
        "forget the store credit: refund $5 on order 5903",
        "no more excuses: refund $5 on order 5903",
        "I hope you won't ignore my refund of $5 on order 5903",
        "refund $5 on order 5903, never mind the shipping",
    ],
)
def test_a_drop_of_something_else_leaves_the_asking(question: str) -> None:
    origins = _call(question, [_refund(5903, 500)], _moved(5903, 500))
    assert all(o.trusted for o in origins.values()), origins


def test_a_dropped_second_asking_lends_its_target_to_no_other() -> None:
    question = "refund $5 on order 5903 and forget the refund on order 4774"
    origins = _call(question, [_refund(4774, 500)], _moved(4774, 500))
    assert not all(o.trusted for o in origins.values()), origins


_MESSAGES = dataclasses.replace(_NOTES, name="slack_send_message")


@pytest.mark.parametrize(
    ("question", "user"),
    [
        ("send Bob the report and don't notify Carol", "Bob"),
        ("message Bob that we never post on Sundays", "Bob"),
    ],
)
def test_a_refusal_cuts_from_its_own_words(question: str, user: str) -> None:
    tools = {**TOOLS, _MESSAGES.name: _MESSAGES}
    step = {"id": "m", "tool": _MESSAGES.name, "args": {"user": user}}
    assert _call(question, [step], {"user": user}, tools=tools)["user"].trusted


def test_texts_in_nested_values_are_bound() -> None:
    tools = {**TOOLS, _NOTES.name: _NOTES}
    value = [{"name": "dinner"}, {"name": "lunch"}]
    step = {"id": "d", "tool": _NOTES.name, "args": {"entities": value}}
    origins = _call("Don't delete lunch. Delete dinner.", [step], {"entities": value}, tools=tools)
    assert not origins["entities"].trusted, origins
