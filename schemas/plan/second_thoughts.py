"""Which of an asking's amounts it asks for, from `AMENDED` (`schemas.plan.asked`).

- A corrected amount is withdrawn: "refund $50, sorry, $5 on order 5903", "$50 no wait
  $5", "$50 -- I meant $5" ask $5. The correction must stand right before the amount that
  replaces it, so "I actually paid $19" corrects nothing.
- A price told of the target is a mention where the asking names another amount: "refund
  $5 on my $19 order 5903", "$5 of the $19.99 I paid", "$5 on order 5903 that cost $19"
  ask $5. Alone it stands: "a refund of the $19 I paid" asks $19.

Plain text rules, as the rest of the reading (they run in workflow code).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from agentkeel.schemas.plan.asked import Mention

_CURRENCY = r"(?:[$€£¥₹]|usd|eur|gbp|inr|jpy)"
_CORRECTED = re.compile(
    r"(?:\bsorry|\bno\s+wait|\bwait|\bi\s+mean[t]?|\bactually|\bmake\s+(?:it|that)"
    r"|\bcorrection|\bscratch\s+that)\b[\s,:;.!-]*"
    r"(?:(?:i\s+)?mean[t]?\s+|make\s+(?:it|that)\s+)?" + _CURRENCY + r"?\s*$",
    re.IGNORECASE,
)
"""What stands right before an amount that replaces the one before it."""
_PRICE_BEFORE = re.compile(
    r"\b(?:worth|priced\s+at|cost(?:s|ing)?|out\s+of|of\s+the|of\s+my|paid|spent"
    r"|bought(?:\s+it)?\s+for|total(?:\s+of)?)\s*" + _CURRENCY + r"?\s*$",
    re.IGNORECASE,
)
_PRICE_AFTER = re.compile(
    r"[\d.,]+\s*k?\s*(?:[$€£¥₹]|dollars?|usd|euros?|eur|bucks|quid|pounds?|gbp)?\s+"
    r"(?:(?:order|item|purchase|product)s?\b|(?:that\s+|which\s+)?(?:i|we)\s+(?:paid|spent)\b)",
    re.IGNORECASE,
)


def asked_amounts(text: str, own: list[Mention], later: list[Mention]) -> list[Mention]:
    """The amounts an asking asks: `own` (its clause's, as written) less those corrected
    or told as a price, plus a `later` one (after its clause) that corrects its last."""
    amounts = list(own)
    for amount in later:
        if amounts and _CORRECTED.search(text[amounts[-1].at : amount.at]):
            amounts.append(amount)
    kept = [
        amount
        for i, amount in enumerate(amounts)
        if not any(_CORRECTED.search(text[amount.at : n.at]) for n in amounts[i + 1 :])
    ]
    told = [a for a in kept if _price_told(text, a)]
    if told and len(told) < len(kept):
        kept = [a for a in kept if a not in told]
    return kept


def _price_told(text: str, amount: Mention) -> bool:
    return bool(
        _PRICE_BEFORE.search(text[max(0, amount.at - 40) : amount.at])
        or _PRICE_AFTER.match(text, amount.at)
    )
