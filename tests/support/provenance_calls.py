"""One side effect's provenance as a run reads it: the unit tests' way in."""

from __future__ import annotations

from agentkeel.schemas.plan.asked import TARGETS
from agentkeel.schemas.plan.model import Plan
from agentkeel.schemas.plan.provenance import Provenance, TrustedFacts
from agentkeel.schemas.tools import TOOLS


def call(
    question: str,
    steps: list[dict],
    resolved: dict,
    *,
    rules: int = TARGETS,
    subject: str | None = None,
    tools: dict | None = None,
) -> dict:
    plan = Plan.model_validate({"steps": steps})
    facts = TrustedFacts(question, subject=subject, rules=rules)
    provenance = Provenance({s.id: s for s in plan.steps}, tools or TOOLS, facts)
    return provenance.of_call(plan.steps[-1], resolved)  # the last step is the effect


def refund(order: object, amount: object) -> dict:
    args = {"order_id": order, "amount_cents": amount, "reason": "asked"}
    return {"id": "r", "tool": "create_refund", "args": args}


def moved(order: int, amount: int) -> dict:
    return {"order_id": order, "amount_cents": amount, "reason": "asked"}
