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
EMAIL_RE = re.compile(r"(?<![\w.+-])[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
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
WATCH_RE = re.compile(
    r"\b(?:tell|notify|let|ping|alert|inform|message|text|email|update|remind)\b[^.?!]*?"
    r"\b(?:when|once|as soon as|the moment|whenever)\b|\bwatch\b|\bkeep an eye\b|"
    r"\bkeep me (?:posted|updated)\b",
    re.I,
)
"""Asks to be told of a change later: the plan watches the order until it happens."""
DELIVERY_RE = re.compile(r"\bdeliver|\barriv|\breach", re.I)
RECHECK_RE = re.compile(r"\b(?:check|look|re-?check|see|remind|try)\b", re.I)
DELAY_RE = re.compile(
    r"\b(?:in|after)\s+(\d+(?:\.\d+)?|an?|one|two|three|four|five|six|twelve|half an?)\s*"
    r"(seconds?|secs?|minutes?|mins?|hours?|hrs?|days?)\b",
    re.I,
)
"""'check order 1002 again in 2 hours': a durable wait, then the lookup."""
_NUMBER_WORDS = {
    "a": 1.0,
    "an": 1.0,
    "one": 1.0,
    "two": 2.0,
    "three": 3.0,
    "four": 4.0,
    "five": 5.0,
    "six": 6.0,
    "twelve": 12.0,
    "half a": 0.5,
    "half an": 0.5,
}
_UNIT_S = {"s": 1, "m": 60, "h": 3600, "d": 86400}

INTENT_KEYWORDS: dict[str, re.Pattern[str]] = {
    "refund": re.compile(r"\brefund|\bmoney back|\breimburs", re.I),
    "order_status": re.compile(
        r"\bwhere\b|\btrack|\bstatus\b|\bship(?:s|ped|ping)?\b|\bdispatch|\bdeliver|\barriv|"
        r"\beta\b|\bcarrier|\b(?:check|look)\b(?: on| at| into)?(?: my)? order\b",
        re.I,
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
    watch_for: list[str] = field(default_factory=list)
    """Order statuses the request wants to be told of ("tell me when it ships")."""
    delay_s: float | None = None
    """How long to wait before looking ("check again in 2 hours")."""

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
        watch_for=_watched_statuses(question),
        delay_s=_delay_s(question),
    )


def _watched_statuses(question: str) -> list[str]:
    if not WATCH_RE.search(question):
        return []
    return ["delivered"] if DELIVERY_RE.search(question) else ["shipped", "delivered"]


def _delay_s(question: str) -> float | None:
    match = DELAY_RE.search(question)
    if match is None or not RECHECK_RE.search(question):
        return None
    amount, unit = match.group(1).lower(), match.group(2).lower()
    count = _NUMBER_WORDS.get(amount) or float(amount)
    return count * _UNIT_S[unit[0]]


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
