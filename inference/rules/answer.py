"""Turns step outcomes into a plain-language answer (the rules policy's respond step)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from schemas.agent import RespondInput
from schemas.result import StepOutcome, StepStatus


def _money(cents: int) -> str:
    return f"${cents / 100:,.2f}"


def _customer(out: dict[str, Any]) -> str:
    return (
        f"Customer {out['name']} ({out['email']}, {out['tier']} tier, {out['city']}), "
        f"id {out['customer_id']}."
    )


def _orders(out: dict[str, Any]) -> str:
    if not out["orders"]:
        return f"Customer {out['customer_id']} has no orders."
    listed = "; ".join(
        f"#{o['order_id']} {o['status']} {_money(o['total_cents'])} ({o['placed_at'][:10]})"
        for o in out["orders"]
    )
    return f"Recent orders of customer {out['customer_id']}: {listed}."


def _order(out: dict[str, Any]) -> str:
    items = ", ".join(f"{i['quantity']} x {i['product_name']} ({i['sku']})" for i in out["items"])
    refunded = f", {_money(out['refunded_cents'])} refunded" if out["refunded_cents"] else ""
    return (
        f"Order {out['order_id']} is {out['status']}: {items}; "
        f"total {_money(out['total_cents'])}{refunded}."
    )


def _inventory(out: dict[str, Any]) -> str:
    where = ", ".join(f"{w['warehouse']} {w['available']}" for w in out["warehouses"])
    if not out["in_stock"]:
        return f"{out['sku']} ({out['product_name']}) is out of stock."
    return f"{out['sku']} ({out['product_name']}): {out['total_available']} available ({where})."


def _tracking(out: dict[str, Any]) -> str:
    last = out["events"][-1] if out["events"] else None
    eta = f", expected {out['eta']}" if out.get("eta") else ""
    seen = f"; last seen: {last['description']} in {last['location']}" if last else ""
    return f"Shipment {out['tracking_number']} ({out['carrier']}) is {out['status']}{eta}{seen}."


def _kb(out: dict[str, Any]) -> str:
    if not out["hits"]:
        return "I found no help-center article about that."
    top = out["hits"][0]
    snippet = top["snippet"].strip()
    if snippet and snippet[-1] not in ".!?…":
        snippet += "…"  # snippets are cut mid-sentence; don't run into the next sentence
    return f"From our help center, “{top['title']}”: {snippet}"


def _refund(out: dict[str, Any]) -> str:
    if out["created"]:
        return (
            f"Refund #{out['refund_id']} of {_money(out['amount_cents'])} for order "
            f"{out['order_id']} has been issued."
        )
    return (
        f"This refund was already issued earlier (refund #{out['refund_id']}, "
        f"{_money(out['amount_cents'])}); nothing was charged twice."
    )


RENDERERS: dict[str, Callable[[dict[str, Any]], str]] = {
    "find_customer": _customer,
    "list_orders": _orders,
    "get_order": _order,
    "check_inventory": _inventory,
    "track_shipment": _tracking,
    "search_kb": _kb,
    "create_refund": _refund,
}


def render_step(step: StepOutcome) -> str:
    if step.status == StepStatus.SUCCEEDED:
        render = RENDERERS.get(step.tool)
        outputs = step.output if isinstance(step.output, list) else [step.output]
        if render is None:
            return f"{step.tool}: {step.output}"
        return " ".join(render(o) for o in outputs if isinstance(o, dict))
    if step.status == StepStatus.SKIPPED:
        return f"I skipped {step.tool} ({step.id}) because a step it needed did not succeed."
    message = step.error.message if step.error else "unknown error"
    return f"I could not complete {step.tool} ({step.id}): {message}."


def render_answer(request: RespondInput) -> str:
    if request.plan_error is not None and not request.steps:
        return (
            "I could not build a valid plan for this request "
            f"({request.plan_error.type}: {request.plan_error.message})."
        )
    if not request.steps:
        return "I have no information to answer that."
    return " ".join(render_step(step) for step in request.steps)
