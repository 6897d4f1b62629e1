"""How numbers are read from a request, one reading per rule level (`schemas.plan.asked`).

The reading before `ASIDES` is kept exactly as runs recorded with it read requests: a
change to how numbers are read is a new reading, never an edit of an old one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_NUMBER = re.compile(
    r"(?<![\w.])\d{1,3}(?:,\d{3})+(?:\.\d+)?(?![\d,])|\d+,\d{2}(?![\d,])|\d+(?:\.\d+)?"
)
"""A number as people write it: `1002`, `19.50`, `1,250.00`, and `5,50` (a decimal comma,
money only where a currency stands beside it: else two numbers, as a list writes them)."""
DECIMAL_COMMA = re.compile(r"^\d+,\d{2}$")
THOUSANDS_AFTER = re.compile(r"^k\b", re.IGNORECASE)
"""`$5k`: five thousand."""
_CURRENCY_BEFORE = re.compile(
    r"(?:[$€£¥₹]|\b(?:usd|eur|gbp|chf|cad|aud|jpy|inr))\s*$", re.IGNORECASE
)
_CURRENCY_AFTER = re.compile(
    r"^\s*(?:dollars?|usd|euros?|eur|pounds?|gbp|bucks|quid|chf|cad|aud|yen|jpy|rupees?|inr)\b",
    re.IGNORECASE,
)
_SYMBOL_AFTER = re.compile(r"^\s?[$€£¥₹]")
"""`5$`, `5 €`: the symbol after the number, as many write it."""
_NUMBER_V1 = re.compile(r"(?<![\w.])\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?")
_CURRENCY_BEFORE_V1 = re.compile(r"(?:[$€£¥]|\b(?:usd|eur|gbp|chf|cad|aud|jpy))\s*$", re.IGNORECASE)
_CURRENCY_AFTER_V1 = re.compile(
    r"^\s*(?:dollars?|usd|euros?|eur|pounds?|gbp|bucks|chf|cad|aud|yen|jpy)\b", re.IGNORECASE
)
_SYMBOL_AFTER_V1 = re.compile(r"^\s?[$€£¥]")
CENTS_AFTER = re.compile(r"^\s*(?:cents?\b|¢)", re.IGNORECASE)

UNITS = {
    "zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
    "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13,
    "fourteen": 14, "fifteen": 15, "sixteen": 16, "seventeen": 17, "eighteen": 18,
    "nineteen": 19, "twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60,
    "seventy": 70, "eighty": 80, "ninety": 90,
}  # fmt: skip
SCALES = {"hundred": 100, "thousand": 1000}
_WORD = "|".join([*UNITS, *SCALES])
_NUMBER_WORDS = re.compile(
    rf"\b(?:a\s+(?=hundred|thousand))?(?:{_WORD})(?:[\s-]+(?:and[\s-]+)?(?:{_WORD}))*\b",
    re.IGNORECASE,
)
"""`twenty-five`, `a hundred`, `one hundred and five`."""
_NUMBER_WORDS_V1 = re.compile(
    rf"\b(?:a\s+(?=hundred|thousand))?(?:{_WORD})(?:[\s-]+(?:{_WORD}))*\b", re.IGNORECASE
)


@dataclass(frozen=True)
class Reading:
    """One way of reading numbers: the patterns, and whether asides are read."""

    number: re.Pattern[str]
    currency_before: re.Pattern[str]
    currency_after: re.Pattern[str]
    symbol_after: re.Pattern[str]
    number_words: re.Pattern[str]
    asides: bool


READINGS = {
    False: Reading(
        _NUMBER_V1, _CURRENCY_BEFORE_V1, _CURRENCY_AFTER_V1, _SYMBOL_AFTER_V1,
        _NUMBER_WORDS_V1, asides=False,
    ),
    True: Reading(
        _NUMBER, _CURRENCY_BEFORE, _CURRENCY_AFTER, _SYMBOL_AFTER, _NUMBER_WORDS,
        asides=True,
    ),
}  # fmt: skip

CUTS_V1 = re.compile(
    r",(?!\s*(?:and\s+|or\s+)?(?:[$€£¥]|usd|eur|gbp)?\s*\d)|;"
    r"|\s(?:but|while|although|though|because|whereas|whilst)\s"
    r"|\sand\s+(?=(?:my|the|our|your|their|his|her|its|this|that|another|other)\b)",
    re.I,
)
"""Where an asking's clause stopped before `ASIDES` (`asides.Clauses` from it)."""


def words_value(words: str) -> str:
    """Numbers written in words as digits: "one hundred and five" is "105"."""
    total, current = 0, 0
    for word in re.split(r"[\s-]+", words.casefold()):
        if word == "and":
            continue
        if word == "a":
            current = current or 1
        elif word in UNITS:
            current += UNITS[word]
        elif word == "hundred":
            current = (current or 1) * 100
        elif word == "thousand":
            total, current = total + (current or 1) * 1000, 0
    return str(total + current)
