"""What provenance says of one refund (or any last step) of a plan, for the tests of the
reading of requests (`schemas.plan.asked`, `schemas.plan.asides`)."""

from __future__ import annotations

from typing import Any

from agentkeel.schemas.plan.model import Plan
from agentkeel.schemas.plan.provenance import READS_AMENDED, Provenance, TrustedFacts
from agentkeel.schemas.tools import TOOLS

REFUND_WORDS = ("refund", "money back", "reimburs")
"""The shop's refund's asking words (`asked_by`)."""


def origins_of_last(
    question: str,
    steps: list[dict[str, object]],
    resolved: dict[str, object],
    rules: int = READS_AMENDED,
) -> dict[str, Any]:
    """The argument origins of the plan's last step, called with `resolved`."""
    plan = Plan.model_validate({"steps": steps})
    facts = TrustedFacts(question, rules=rules)
    provenance = Provenance({s.id: s for s in plan.steps}, TOOLS, facts)
    return provenance.of_call(plan.steps[-1], resolved)


def refund_step(order: object, amount: object) -> dict[str, object]:
    args = {"order_id": order, "amount_cents": amount, "reason": "x"}
    return {"id": "r", "tool": "create_refund", "args": args}
