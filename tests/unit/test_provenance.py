"""Where a side effect's target and amount come from, and who may approve it (pure rules)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import cast

import pytest
from temporalio import activity

from agentkeel.activities.tools.door import refusal
from agentkeel.schemas.actor import Actor, name_skeleton, same_person
from agentkeel.schemas.plan.model import Plan
from agentkeel.schemas.plan.provenance import Provenance, TrustedFacts
from agentkeel.schemas.tools import TOOLS
from agentkeel.workflows.dag.effect_naming import effect_identity


def _origins(question: str, steps: list[dict], *, subject: str | None = None, caller=False):
    plan = Plan.model_validate({"steps": steps})
    provenance = Provenance(
        {s.id: s for s in plan.steps},
        TOOLS,
        TrustedFacts(question, subject=subject, caller_plan=caller),
    )
    return provenance.of_effect(plan.steps[-1])


def _refund(order: object, amount: object) -> dict:
    return {
        "id": "r",
        "tool": "create_refund",
        "args": {"order_id": order, "amount_cents": amount, "reason": "damaged"},
    }


LOOKUP = {"id": "s1", "tool": "get_order", "args": {"order_id": 1002}}
ARTICLE = {"id": "kb", "tool": "search_kb", "args": {"query": "refunds"}}


def test_values_named_in_the_request_are_trusted() -> None:
    origins = _origins("Refund $19.50 on order 1002", [_refund(1002, 1950)])
    assert all(o.trusted for o in origins.values()), origins


def test_a_trusted_field_of_a_lookup_by_a_trusted_id_is_trusted() -> None:
    origins = _origins(
        "refund order 1002 in full", [LOOKUP, _refund("$s1.order_id", "$s1.total_cents")]
    )
    assert all(o.trusted for o in origins.values()), origins


@pytest.mark.parametrize(
    ("question", "moved", "trusted"),
    [
        # The request named its amount: an order's total may not stand in for it.
        ("refund $5 on order 1002", 31898, False),
        ("refund $5 on order 1002", 500, True),
        # It named none: the trusted lookup's total is the amount.
        ("refund order 1002 in full", 31898, True),
    ],
)
def test_named_amounts_bind_the_amount_a_call_really_moves(
    question: str, moved: int, trusted: bool
) -> None:
    plan = Plan.model_validate({"steps": [LOOKUP, _refund("$s1.order_id", "$s1.total_cents")]})
    provenance = Provenance({s.id: s for s in plan.steps}, TOOLS, TrustedFacts(question))
    resolved = {"order_id": 1002, "amount_cents": moved, "reason": "damaged"}
    origins = provenance.of_call(plan.steps[-1], resolved)
    assert origins["amount_cents"].trusted is trusted, origins
    assert origins["order_id"].trusted


@pytest.mark.parametrize(
    ("question", "steps", "untrusted"),
    [
        # Another order than the one asked about: only the planner knows it.
        ("Refund $19.50 on order 1002", [_refund(1003, 1950)], "order_id"),
        # More than was asked.
        ("Refund $19.50 on order 1002", [_refund(1002, 5000)], "amount_cents"),
        # An article's text is untrusted content, whatever it says.
        ("refund order 1002", [ARTICLE, _refund(1002, "$kb.hits.0.article_id")], "amount_cents"),
        # A trusted field of a lookup the planner aimed elsewhere.
        (
            "refund order 1002",
            [
                {"id": "s1", "tool": "get_order", "args": {"order_id": 1009}},
                _refund(1002, "$s1.total_cents"),
            ],
            "amount_cents",
        ),
    ],
)
def test_values_from_elsewhere_are_untrusted(question: str, steps: list, untrusted: str) -> None:
    origins = _origins(question, steps)
    assert not origins[untrusted].trusted, origins


def test_numbers_match_as_written_not_inside_other_numbers() -> None:
    facts = TrustedFacts("refund $1,250.00 on order 7")
    assert facts.numbers("amount") == {125000} and facts.numbers("identity") == {7}
    assert 12 not in facts.numbers() and 25 not in facts.numbers()


@pytest.mark.parametrize(
    ("words", "cents"),
    [("$19.50", 1950), ("19.50", 1950), ("15 euros", 1500), ("EUR 15", 1500), ("500 cents", 500)],
)
def test_money_is_read_as_an_amount_in_cents(words: str, cents: int) -> None:
    assert cents in TrustedFacts(f"refund {words} on order 1002").numbers("amount")


def test_an_order_id_is_no_amount_and_money_is_no_target() -> None:
    # "refund order 1002": a planner that refunds 1002 cents, or refunds order 150 of "$150".
    amount = _origins("refund $150 on order 1002", [_refund(1002, 1002)])["amount_cents"]
    assert not amount.trusted and "not as money" in amount.says
    assert not _origins("refund $150 on order 1002", [_refund(150, 15000)])["order_id"].trusted


def test_a_callers_plan_and_the_actors_subject_are_trusted() -> None:
    assert all(o.trusted for o in _origins("go", [_refund(1003, 999)], caller=True).values())
    origins = _origins("refund 5 dollars", [_refund(42, 500)], subject="42")
    assert origins["order_id"].trusted and origins["amount_cents"].trusted


def test_an_effect_key_names_what_it_changes_not_where_it_sits() -> None:
    spec = TOOLS["create_refund"]
    args = {"order_id": 7, "amount_cents": 500, "reason": "a"}
    assert effect_identity(spec, args) == "create_refund:order_id=7:amount_cents=500"
    assert effect_identity(spec, {**args, "reason": "b"}) == effect_identity(spec, args)


@pytest.mark.parametrize("look_alike", ["ANN", "a\u200bnn", "\u0430nn", "\uff41\uff4e\uff4e"])
def test_a_look_alike_name_is_the_same_person(look_alike: str) -> None:
    assert name_skeleton(look_alike) == "ann"
    requester = Actor(role="staff", name="ann")
    assert same_person(requester, Actor(role="staff", name=look_alike))


def test_identity_decides_not_the_display_name() -> None:
    customer = Actor(role="customer", subject="5", name="Pat")
    assert same_person(customer, Actor(role="customer", subject="5", name="someone"))
    assert not same_person(customer, Actor(role="staff", name="bob"))
    # Who asked without a name or subject cannot be told apart from another of its role.
    assert same_person(Actor(role="staff"), Actor(role="staff", name="bob"))


def _info(workflow_type: str | None, workflow_id: str | None) -> activity.Info:
    # Only the fields the door reads; the rest of an activity.Info does not matter to it.
    return cast(
        activity.Info,
        SimpleNamespace(
            workflow_type=workflow_type,
            workflow_id=workflow_id,
            in_workflow=workflow_id is not None,
        ),
    )


def test_the_door_refuses_every_caller_that_is_not_a_run() -> None:
    refund, read = TOOLS["create_refund"], TOOLS["get_order"]
    assert refusal(refund, _info(None, None))  # a standalone activity
    assert refusal(refund, _info("AgentFanOut", "w"))  # parts never make side effects
    assert refusal(read, _info("SomeoneElsesWorkflow", "w"))
    assert refusal(refund, _info("AgentWorkflow", "w")) is None
    assert refusal(read, _info("AgentFanOut", "w")) is None


def test_a_trusted_service_may_approve_what_an_unnamed_service_asked() -> None:
    assert not same_person(Actor(), Actor(name="ops-bot"))
