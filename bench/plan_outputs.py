"""Tool outputs for the plan-quality benchmark's answers, made up from each call's arguments.

The benchmark scores an answer's grounding: every fact in it (numbers, IDs) must come from
the question or a tool output. So each planned step is given an output, deterministic in
its literal arguments and valid against the tool's result model, for the example shop's
tools (the labelled domain); a data row may bring its own `outputs` (by tool) for another
domain. A tool with neither has no output, and such a row's answer is not scored.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from agentkeel.schemas.plan.model import Plan
from agentkeel.schemas.result import StepOutcome, StepStatus
from agentkeel.schemas.tools import TOOLS


def _int(value: Any, default: int) -> int:
    return value if isinstance(value, int) else default


def _order(args: Mapping[str, Any]) -> dict[str, Any]:
    order_id = _int(args.get("order_id"), 1001)
    return {
        "order_id": order_id,
        "customer_id": 40 + order_id % 50,
        "status": "shipped",
        "total_cents": 4599,
        "refunded_cents": 0,
        "placed_at": "2026-11-20T10:00:00Z",
        "items": [
            {
                "sku": "SKU-00042",
                "product_name": "Trail Backpack",
                "quantity": 1,
                "unit_price_cents": 4599,
            }
        ],
        "tracking_number": f"TRK{order_id:010d}",
    }


def _stock(args: Mapping[str, Any]) -> dict[str, Any]:
    sku = args.get("sku") if isinstance(args.get("sku"), str) else "SKU-00042"
    return {
        "sku": sku,
        "product_name": "Trail Backpack",
        "total_available": 17,
        "in_stock": True,
        "warehouses": [{"warehouse": "Rotterdam", "available": 17}],
    }


def _tracking(args: Mapping[str, Any]) -> dict[str, Any]:
    number = args.get("tracking_number")
    return {
        "tracking_number": number
        if isinstance(number, str) and "$" not in number
        else "TRK0000001001",
        "carrier": "PostNL",
        "status": "in_transit",
        "eta": "2026-12-05",
        "events": [{"at": "2026-12-02T08:00:00Z", "location": "Utrecht", "description": "sorted"}],
    }


def _kb(args: Mapping[str, Any]) -> dict[str, Any]:
    hit = {
        "article_id": 7,
        "title": "Returns and refunds",
        "rank": 0.9,
        "snippet": "Items can be returned within 30 days; refunds reach the card in 5 days.",
    }
    return {"query": str(args.get("query", "")), "hits": [hit]}


SHOP_OUTPUTS: dict[str, Callable[[Mapping[str, Any]], dict[str, Any]]] = {
    "get_order": _order,
    "check_inventory": _stock,
    "track_shipment": _tracking,
    "search_kb": _kb,
    "find_customer": lambda a: {
        "customer_id": 77,
        "name": "Noor Jansen",
        "email": str(a.get("email", "")),
        "tier": "gold",
        "city": "Utrecht",
    },
    "list_orders": lambda a: {
        "customer_id": 77,
        "order_ids": [1058, 1042],
        "orders": [
            {"order_id": 1058, "status": "shipped", "total_cents": 2599, "placed_at": "2026-11-28"}
        ],
    },
    "create_refund": lambda a: {
        "refund_id": 501,
        "order_id": _int(a.get("order_id"), 1001),
        "customer_id": 77,
        "amount_cents": _int(a.get("amount_cents"), 0),
        "status": "created",
        "created": True,
    },
    "wait": lambda a: {"waited_until": "2026-12-03T12:00:00Z", "waited_s": 7200},
}


def outcomes(plan: Plan, given: Mapping[str, Any] | None = None) -> list[StepOutcome] | None:
    """Succeeded outcomes of `plan`'s steps; None when a step's tool has no output to give."""
    made: list[StepOutcome] = []
    for step in plan.steps:
        args = step.args if isinstance(step.args, dict) else {}
        if given and step.tool in given:
            output = given[step.tool]
        elif step.tool in SHOP_OUTPUTS and step.tool in TOOLS:
            output = TOOLS[step.tool].result_model.model_validate(SHOP_OUTPUTS[step.tool](args))
            output = output.model_dump(mode="json")
        else:
            return None
        made.append(
            StepOutcome(
                id=step.id, tool=step.tool, args=args, status=StepStatus.SUCCEEDED, output=output
            )
        )
    return made
