"""The demo domain in words: the agent's persona and the intents it serves, with their tools.

Policies read these instead of naming the shop themselves: the LLM policy builds its
prompt from them, the rules policy reports the tools of the intent it recognised.
"""

from __future__ import annotations

from typing import Any

from agentkeel.schemas.tools.catalog import SIDE_EFFECT_TOOLS

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
INTENTS: tuple[str, ...] = tuple(INTENT_TOOLS)
INTENT_JOINER = "+"
"""How a route names a request with several intents: `refund+order_status`."""


def requested_side_effects(intent: str) -> frozenset[str]:
    """The side-effecting tools a request of `intent` asks for: a plan may use these only.

    Decided from the router's reading of the request itself, before any tool has run, so
    text inside tool output (a carrier event, an article) can never ask for an effect.
    """
    # A request may carry several intents at once ("refund+order_status").
    tools = {tool for part in intent.split(INTENT_JOINER) for tool in INTENT_TOOLS.get(part, ())}
    return frozenset(tools) & SIDE_EFFECT_TOOLS


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
"""One valid plan in the catalog's own tools, shown to models as the plan format."""
