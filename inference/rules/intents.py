"""Intent and entity recognition for the rules policy: regular expressions, no model.

Deterministic on purpose: tests, replays and machines without a GPU get the
same routes and plans every time.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TypeVar

T = TypeVar("T")

ORDER_RE = re.compile(r"(?:\border\s*(?:number|no\.?|#)?\s*#?|#)\s*(\d{4,9})\b", re.I)
EMAIL_RE = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
SKU_RE = re.compile(r"\bSKU-\d{5}\b", re.I)
TRACKING_RE = re.compile(r"\bTRK\d{10}\b", re.I)
AMOUNT_RE = re.compile(
    r"(?:\$|€|£)\s*(\d+(?:\.\d{1,2})?)|(\d+(?:\.\d{1,2})?)\s*(?:usd|eur|dollars)\b", re.I
)
CENTS_RE = re.compile(r"\b(\d+)\s*cents?\b", re.I)
QUESTION_RE = re.compile(
    r"\?|^\s*(?:can|could|may|might|is|are|do|does|did|how|what|when|why|will|would|should)\b",
    re.I,
)
"""A question asks about something; only a request in the imperative may move money."""

INTENT_KEYWORDS: dict[str, re.Pattern[str]] = {
    "refund": re.compile(r"\brefund|\bmoney back|\breimburs", re.I),
    "order_status": re.compile(
        r"\bwhere\b|\btrack|\bstatus\b|\bshipp|\bdeliver|\barriv|\beta\b|\bcarrier", re.I
    ),
    "order_stock": re.compile(r"\bin stock\b|\bstock\b|\bavailab|\binventory|\bfulfil", re.I),
    "customer_orders": re.compile(
        r"\borders\b|\bpurchases\b|\border history|\baccount\b|\bbought\b", re.I
    ),
    "policy": re.compile(
        r"\bpolic(?:y|ies)\b|\bhow (?:do|can|long|does)\b|\bcan i\b|\breturns?\b|\bwarrant|"
        r"\bexchang|\bcancel",
        re.I,
    ),
}


@dataclass
class Entities:
    orders: list[int] = field(default_factory=list)
    emails: list[str] = field(default_factory=list)
    skus: list[str] = field(default_factory=list)
    tracking: list[str] = field(default_factory=list)
    amount_cents: int | None = None
    is_question: bool = False

    @property
    def any(self) -> bool:
        return bool(self.orders or self.emails or self.skus or self.tracking)


def extract_entities(question: str) -> Entities:
    amount = AMOUNT_RE.search(question)
    cents = CENTS_RE.search(question)
    amount_cents = None
    if cents:
        amount_cents = int(cents.group(1))
    elif amount:
        amount_cents = round(float(amount.group(1) or amount.group(2)) * 100)
    return Entities(
        orders=_unique(int(m) for m in ORDER_RE.findall(question)),
        emails=_unique(m.lower() for m in EMAIL_RE.findall(question)),
        skus=_unique(m.upper() for m in SKU_RE.findall(question)),
        tracking=_unique(m.upper() for m in TRACKING_RE.findall(question)),
        amount_cents=amount_cents,
        is_question=bool(QUESTION_RE.search(question)),
    )


def matched_intents(question: str) -> list[str]:
    """Intents whose keywords occur, in a fixed order (refund outranks status, etc.)."""
    return [name for name, pattern in INTENT_KEYWORDS.items() if pattern.search(question)]


def satisfied(intent: str, entities: Entities) -> bool:
    """Whether the question carries the entities this intent needs to act."""
    needs = {
        # Money moves only on an explicit instruction: one order, a stated amount, no question.
        "refund": bool(
            entities.orders and entities.amount_cents is not None and not entities.is_question
        ),
        "order_status": bool(entities.orders or entities.tracking),
        "order_stock": bool(entities.orders or entities.skus),
        "customer_orders": bool(entities.emails),
        "policy": True,
    }
    return needs[intent]


def _unique(values: Iterable[T]) -> list[T]:
    seen: list[T] = []
    for value in values:
        if value not in seen:
            seen.append(value)
    return seen
