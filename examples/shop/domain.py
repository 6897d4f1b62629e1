"""The example shop as an agentkeel domain: one value a worker serves.

A customer-service agent over Postgres (customers, products, stock by warehouse, orders,
shipments, refunds, a knowledge base) and a carrier-tracking HTTP service. It is what
`agentkeel demo` runs, and a worked example of everything a domain may declare.
"""

from __future__ import annotations

from typing import Any

from agentkeel import (
    DemoQuestion,
    Domain,
    EntityPattern,
    LocalService,
    Migrations,
    Role,
    Vocabulary,
)
from agentkeel.examples.shop import vocabulary as words
from agentkeel.examples.shop.demo_watch import demo_watch
from agentkeel.examples.shop.downstreams import CARRIER, KNOWLEDGE, ORDERS_DB
from agentkeel.examples.shop.resources import ShopSettings, shop_resources
from agentkeel.examples.shop.seed import seed_demo_data
from agentkeel.examples.shop.tools import TOOLS

PERSONA = (
    "You are the support agent of an online shop. You answer customers' questions "
    "about their orders, shipments, stock and the shop's policies, using tools."
)
GROUND_RULES = "Never refund without an explicit amount."
"""What the agent must never do, whatever the request says (the tools enforce it too)."""

INTENT_TOOLS: dict[str, tuple[str, ...]] = {
    "order_status": ("get_order", "track_shipment"),
    "refund": ("get_order", "search_kb", "create_refund"),
    "order_stock": ("get_order", "check_inventory"),
    "customer_orders": ("find_customer", "list_orders", "get_order"),
    "policy": ("search_kb",),
}
"""What each intent the router may pick usually needs; the route reports these tools."""

EXAMPLE_PLAN: dict[str, Any] = {
    "rationale": "look up the order, then track its parcel",
    "steps": [
        {"id": "s1", "tool": "get_order", "args": {"order_id": 1002}},
        {
            "id": "s2",
            "tool": "track_shipment",
            "args": {"tracking_number": "$s1.tracking_number"},
            "when": {"ref": "$s1.tracking_number", "is": "present"},
        },
    ],
}
"""One valid plan in the shop's own tools, shown to models as the plan format."""

ROLES = (
    Role(
        "customer",
        "a shop customer: sees and acts on its own customer record, orders, shipments and "
        "refunds only; refunds above the self-service limit wait for approval",
        scoped=True,
        subject_pattern=r"[1-9][0-9]{0,9}",  # the customers table's ids
    ),
    Role(
        "staff",
        "a support agent: reads everything, approves side effects, may send its own plans",
        may_approve=True,
        may_send_plans=True,
    ),
)

REPEATED = "What is your return policy for damaged items?"
DEMO_QUESTIONS = (
    DemoQuestion(
        "Where is order 1001?", "dependent steps: the tracking number comes from the order"
    ),
    DemoQuestion(
        "Is SKU-00001 in stock, and SKU-00002, and SKU-00003?",
        "parallel steps: three independent stock checks",
    ),
    DemoQuestion(
        "Can order 1002 be fulfilled from stock?",
        "runtime expansion: one stock check per item of the order",
    ),
    DemoQuestion(
        "Where is order 1003, and what is your return policy?",
        "parallel branches, one of them dependent",
    ),
    DemoQuestion(
        "Show the orders of alice@example.com", "dependent steps: customer, then their orders"
    ),
    DemoQuestion(
        "I have a problem with something I got",
        "an unsure route: the planner writes the plan",
    ),
    DemoQuestion(REPEATED, "a knowledge-base question (stored in the path cache)"),
    DemoQuestion(
        REPEATED.upper(),
        "the same question again: the client answers from the exact tier",
        shows_cache=True,
    ),
    DemoQuestion(
        "Whats your policy on returning damaged items?",
        "a paraphrase: a guarded semantic hit (when the semantic extra is installed)",
        shows_cache=True,
    ),
    DemoQuestion(
        "Where is order 1001?",
        "the first question again: live tracking has no TTL, so the cached plan is reused",
        shows_cache=True,
    ),
)


def _sku(raw: str) -> str:
    return f"SKU-{int(raw):05d}"


def _rules_policy(threshold: float) -> Any:
    from agentkeel.examples.shop.rules.policy import RulesPolicy  # only where it serves

    return RulesPolicy(threshold=threshold)


domain = Domain(
    name="shop",
    tools=TOOLS,
    persona=PERSONA,
    ground_rules=GROUND_RULES,
    intents=INTENT_TOOLS,
    roles=ROLES,
    entity_args=("order_id", "customer_id", "sku", "tracking_number", "email"),
    entity_lists={"order_ids": "order_id"},
    entity_patterns=(
        EntityPattern("sku", r"\bsku[\s#:-]*(\d+)\b", normalize=_sku),
        EntityPattern("tracking_number", r"\btrk[\s#:-]*(\d{6,})\b", normalize=lambda n: f"TRK{n}"),
        EntityPattern(
            "order_id", r"(?:\border\s*(?:number|no\.?|#)?\s*#?|#)\s*(\d{4,9})\b", guard=False
        ),
        EntityPattern("email", r"(?<![\w.+-])[\w.+-]+@[\w-]+(?:\.[\w-]+)+", guard=False),
    ),
    downstreams=(ORDERS_DB, CARRIER, KNOWLEDGE),
    vocabulary=Vocabulary(
        concepts=words.CONCEPTS,
        framing=frozenset(words.FRAMING),
        general_folds=words.GENERAL_FOLDS,
        particular_folds=words.PARTICULAR_FOLDS,
        actions=words.ACTIONS,
        comparisons=words.COMPARISONS,
    ),
    migrations=Migrations("agentkeel.examples.shop", prefix=""),
    seed=seed_demo_data,
    demo_questions=DEMO_QUESTIONS,
    demo_script=demo_watch,
    rules_policy=_rules_policy,
    resources=shop_resources,
    settings=ShopSettings,
    example_plan=EXAMPLE_PLAN,
    local_services=(
        LocalService(
            name="carrier",
            module="agentkeel.examples.shop.carrier",
            setting="carrier_url",
            args=("--latency-ms", "40"),
        ),
    ),
)
"""Migrations recorded without a prefix: the shop's first file predates domains
(`0001_domain`), and databases made then must not apply it twice."""
