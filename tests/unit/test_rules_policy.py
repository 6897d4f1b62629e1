"""The rules policy: intents, entities, fixed confidence levels said to be rules, valid plans."""

from __future__ import annotations

import pytest

from agentkeel.examples.shop.rules.policy import RulesPolicy
from agentkeel.schemas.model_calls import JoinDecision, JoinInput, PlanInput, RouteInput
from agentkeel.schemas.plan.model import Plan
from agentkeel.schemas.plan.validation import validate_plan
from agentkeel.schemas.result import StepError
from agentkeel.schemas.tools import TOOLS

CONFIDENT = [
    ("Where is order 1001?", "order_status", ["get_order", "track_shipment"]),
    ("Refund $12.50 for order #1002", "refund", ["get_order", "search_kb", "create_refund"]),
    ("Is SKU-00001 in stock, and SKU-00002?", "order_stock", ["check_inventory"] * 2),
    ("Can order 1002 be fulfilled from stock?", "order_stock", ["get_order", "check_inventory"]),
    ("Show the orders of alice@example.com", "customer_orders", ["find_customer", "list_orders"]),
    ("How do refunds work?", "policy", ["search_kb"]),
    (
        "Where is order 1003, and what is your return policy?",
        "order_status+policy",
        ["get_order", "track_shipment", "search_kb"],
    ),
]

UNSURE = [
    "I have a problem with my stuff",
    "Can I get a refund for order 1002?",  # a question about refunds moves no money
    "Is a refund possible for order 1004? What is your policy?",
    "Refund order 1001",  # no amount stated: never default to the order's total
    "something about order 1001",
    "where is my order?",  # the intent, but not the order it needs
    "refund please",
]


@pytest.mark.parametrize(("question", "intent", "tools"), CONFIDENT)
async def test_confident_routes_come_with_valid_plans(
    question: str, intent: str, tools: list[str]
) -> None:
    routed = await RulesPolicy().route(RouteInput(question=question))
    assert routed.confident
    assert routed.route.intent == intent
    assert routed.route.confidence >= 0.7
    assert routed.draft_plan is not None
    assert [s.tool for s in routed.draft_plan.steps] == tools
    validate_plan(routed.draft_plan, TOOLS)


@pytest.mark.parametrize("question", UNSURE)
async def test_ambiguous_questions_are_unsure_and_planned(question: str) -> None:
    policy = RulesPolicy()
    routed = await policy.route(RouteInput(question=question))
    assert not routed.confident
    assert routed.route.confidence < 0.7
    assert routed.draft_plan is None
    planned = await policy.plan(PlanInput(question=question, route=routed.route))
    validate_plan(planned.plan, TOOLS)
    assert planned.plan.steps[-1].tool == "search_kb"


async def test_refund_waits_for_the_order_lookup() -> None:
    routed = await RulesPolicy().route(RouteInput(question="Refund $5 for order 1001"))
    assert routed.draft_plan is not None
    refund = routed.draft_plan.steps[-1]
    assert refund.tool == "create_refund" and refund.after == ["s1"]
    assert refund.args["amount_cents"] == 500


@pytest.mark.parametrize(
    ("question", "cents"),
    [
        ("Refund 500 cents on order 1001", 500),
        ("$20 refund for order 1005 please", 2000),
        ("Please refund EUR... no: refund 12.5 dollars for order 1001", 1250),
    ],
)
async def test_refund_needs_an_explicit_amount(question: str, cents: int) -> None:
    routed = await RulesPolicy().route(RouteInput(question=question))
    assert routed.confident and routed.draft_plan is not None
    refund = routed.draft_plan.steps[-1]
    assert refund.tool == "create_refund"
    assert refund.args["amount_cents"] == cents
    validate_plan(routed.draft_plan, TOOLS)


async def test_unsure_refund_questions_never_plan_a_refund() -> None:
    policy = RulesPolicy()
    for question in UNSURE:
        routed = await policy.route(RouteInput(question=question))
        planned = await policy.plan(PlanInput(question=question, route=routed.route))
        assert "create_refund" not in [s.tool for s in planned.plan.steps], question


async def test_compound_intents_share_lookups() -> None:
    question = "Please refund $5 for order 1001 and tell me where order 1001 is"
    routed = await RulesPolicy().route(RouteInput(question=question))
    assert routed.draft_plan is not None
    tools = [s.tool for s in routed.draft_plan.steps]
    assert tools.count("get_order") == 1, tools
    assert "track_shipment" in tools and "create_refund" in tools


async def test_threshold_is_a_setting() -> None:
    strict = RulesPolicy(threshold=0.95)
    routed = await strict.route(RouteInput(question="Where is order 1001?"))
    assert not routed.confident


async def test_join_replans_a_rejected_plan_within_the_bound() -> None:
    error = StepError(type="UnknownTool", message="x", non_retryable=True)
    plan = Plan(steps=[])
    policy = RulesPolicy()
    first = await policy.join(
        JoinInput(question="q", plan=plan, steps=[], plan_error=error, replans=0, max_replans=1)
    )
    last = await policy.join(
        JoinInput(question="q", plan=plan, steps=[], plan_error=error, replans=1, max_replans=1)
    )
    assert first.decision == JoinDecision.REPLAN
    assert last.decision == JoinDecision.FINISH
