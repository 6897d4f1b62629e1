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

import itertools
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from agentkeel.schemas.plan.kinds import Mention

_CURRENCY = r"(?:[$€£¥₹]|usd|eur|gbp|inr|jpy)"
_CORRECTED = re.compile(
    r"(?:\bsorry|\bno\s+wait|\bwait|\bi\s+mean[t]?|\bactually|\bmake\s+(?:it|that)"
    r"|\bcorrection|\bscratch\s+that)\b[\s,:;.!-]*"
    r"(?:(?:i\s+)?mean[t]?\s+|make\s+(?:it|that)\s+)?(?:" + _CURRENCY + r"\s*)?$",
    re.IGNORECASE,
)
"""What stands right before an amount that replaces the one before it."""
_CORRECTION_BETWEEN = re.compile(
    r"^[\d.,]*(?:\s*k\b)?\s*(?:[$€£¥₹]|dollars?|usd|euros?|eur|bucks|quid|pounds?|gbp|cents?)?"
    r"(?:\s+(?:on|for|of)\s+(?:(?:my|the)\s+)?(?:[a-z]+\s*)?[#:]?\s*\d+)?"
    r"[\s,;:.!()\-\u2013\u2014]*"
    r"(?:sorry|no\s+wait|wait|no|i\s+mean[t]?|actually|make\s+(?:it|that)|correction"
    r"|scratch\s+that|w?hoops|oops(?:ie)?|my\s+bad|typo|or\s+rather|rather|i\s+meant\s+to\s+say"
    r"|err?|erm|uh+|um+|ugh)"
    r"(?:[\s,;:.!()\-\u2013\u2014]+(?:i\s+)?(?:mean[t]?|make\s+(?:it|that)|it[\u2019']?s"
    r"|it\s+is))?"
    r"[\s,;:.!()\-\u2013\u2014]*(?:[$€£¥₹]|usd|eur|gbp|inr|jpy)?\s*$",
    re.IGNORECASE,
)
"""From `TARGETS` (`schemas.plan.asked`): only a correction word between two amounts, and
nothing else (but the target asked: "$50 on order 5903 oops $5"), corrects the first
("$50 oops $5", "$50, my bad, $5", "$50 or rather $5", "$50 no, $5"): "my balance should
be $45" after an asked $5 corrects nothing."""
_PRICE_BEFORE = re.compile(
    r"\b(?:worth|priced\s+at|cost(?:s|ing)?|out\s+of|of\s+the|of\s+my|paid|spent"
    r"|bought(?:\s+it)?\s+for|total(?:\s+of)?)\s*(?:" + _CURRENCY + r"\s*)?$",
    re.IGNORECASE,
)
_PRICE_AFTER = re.compile(
    r"[\d.,]+(?:\s*k)?(?:\s*(?:[$€£¥₹]|dollars?|usd|euros?|eur|bucks|quid|pounds?|gbp))?\s+"
    r"(?:(?:order|item|purchase|product)s?\b|(?:that\s+|which\s+)?(?:i|we)\s+(?:paid|spent)\b)",
    re.IGNORECASE,
)
"""Each part of the amount's own text is optional once and taken by one quantifier: no
run of spaces can be split between two of them (the reading runs in workflow code)."""
_WINDOW = 60
"""How far around an amount its price is read: the patterns name a few words at most."""


@dataclass(frozen=True)
class SecondThoughts:
    """One sentence's amounts that are not asked, read once: `corrected` (where each
    amount's start is), replaced by the amount after it, and `told` as a price."""

    corrected: frozenset[int]
    told: frozenset[int]

    @classmethod
    def of(cls, text: str, amounts: list[Mention], *, more: bool = False) -> SecondThoughts:
        """`amounts`: the sentence's, in order; each is read against the next alone, so
        the reading is linear in the sentence's length. `more`: read the corrections of
        `TARGETS` too."""
        pairs = itertools.pairwise(amounts)
        return cls(
            frozenset(a.at for a, b in pairs if _corrects(text, a, b, more=more)),
            frozenset(a.at for a in amounts if _price_told(text, a)),
        )

    def asked(self, own: list[Mention], later: list[Mention]) -> list[Mention]:
        """The amounts an asking asks: `own` (its clause's, as written) less those corrected
        or told as a price, plus the first `later` one (after its clause) if it corrects
        the last."""
        amounts = list(own)
        if amounts and later and amounts[-1].at in self.corrected:
            amounts.append(later[0])
        kept = [a for a in amounts[:-1] if a.at not in self.corrected] + amounts[-1:]
        untold = [a for a in kept if a.at not in self.told]
        return untold if untold else kept  # a price told of every amount: it is the one


def _corrects(text: str, first: Mention, then: Mention, *, more: bool) -> bool:
    if more:  # the whole text between them is the correction
        return then.at - first.at <= _WINDOW and bool(
            _CORRECTION_BETWEEN.match(text[first.at : then.at])
        )
    return bool(_CORRECTED.search(text, max(first.at, then.at - _WINDOW), then.at))


def _price_told(text: str, amount: Mention) -> bool:
    return bool(
        _PRICE_BEFORE.search(text, max(0, amount.at - _WINDOW), amount.at)
        or _PRICE_AFTER.match(text, amount.at, amount.at + _WINDOW)
    )
