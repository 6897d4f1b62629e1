"""Reading a request as people write it: which numbers are money, which name something, and
which of them the request asks a side effect to act on rather than merely mentions.

"my other order 4774 cost $26.97 ... refund $5 on order 5903" mentions order 4774 and
$26.97, and asks for $5 on order 5903: a refund of $26.97 on order 4774 is not what it
asks. The reading is plain text rules (deterministic: it runs in workflow code), kept to
what the core can know of any domain; the words that ask for a side effect are the
tool's own (`ToolSpec.asked_by`, the shop's refund: "refund", "money back").
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Literal

__all__ = ["Mention", "Region", "asked_regions", "mentions"]

_NUMBER = re.compile(r"(?<![\w.])\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?")
"""A number as people write it: `1002`, `19.50`, `1,250.00`."""
_CURRENCY_BEFORE = re.compile(r"(?:[$€£¥]|\b(?:usd|eur|gbp|chf|cad|aud|jpy))\s*$", re.IGNORECASE)
_CURRENCY_AFTER = re.compile(
    r"^\s*(?:dollars?|usd|euros?|eur|pounds?|gbp|bucks|chf|cad|aud|yen|jpy)\b", re.IGNORECASE
)
_SYMBOL_AFTER = re.compile(r"^\s?[$€£¥]")
"""`5$`, `5 €`: the symbol after the number, as many write it."""
_CENTS_AFTER = re.compile(r"^\s*(?:cents?\b|¢)", re.IGNORECASE)

_UNITS = {
    "zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
    "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13,
    "fourteen": 14, "fifteen": 15, "sixteen": 16, "seventeen": 17, "eighteen": 18,
    "nineteen": 19, "twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60,
    "seventy": 70, "eighty": 80, "ninety": 90,
}  # fmt: skip
_SCALES = {"hundred": 100, "thousand": 1000}
_WORD = "|".join([*_UNITS, *_SCALES])
_NUMBER_WORDS = re.compile(
    rf"\b(?:a\s+(?=hundred|thousand))?(?:{_WORD})(?:[\s-]+(?:{_WORD}))*\b",
    re.IGNORECASE,
)
_CUTS = re.compile(
    r",(?!\s*(?:and\s+|or\s+)?(?:[$€£¥]|usd|eur|gbp)?\s*\d)|;"
    r"|\s(?:but|while|although|though|because|whereas|whilst)\s"
    r"|\sand\s+(?=(?:my|the|our|your|their|his|her|its|this|that|another|other)\b)",
    re.I,
)
"""Where what a request asks stops: "refund $5 on order 5903, my other order cost $26.97",
"... and my other order cost ..." (a comma or an "and" that goes on with a number lists
more: "$19.99, $19.98 and $19.97")."""
_SENTENCES = re.compile(r"\.{2,}|…|(?<!\bno)(?<!\bNo)(?<!\bnr)[.!?](?=\s|$)(?!\s*#?\d)|\n")

Kind = Literal["amount", "name"]


@dataclass(frozen=True)
class Mention:
    """A number in the request: an amount (money, in cents) or a name (`order 1002`)."""

    at: int
    value: int
    kind: Kind


@dataclass(frozen=True)
class Region:
    """What one asking of a request names: the targets and the amounts asked together."""

    names: frozenset[int]
    amounts: frozenset[int]


def spelled_out(text: str) -> str:
    """`text` with numbers written in words as digits: "five dollars" is "5 dollars"."""
    return _NUMBER_WORDS.sub(lambda m: _words_value(m.group()), text)


def _words_value(words: str) -> str:
    total, current = 0, 0
    for word in re.split(r"[\s-]+", words.casefold()):
        if word == "a":
            current = current or 1
        elif word in _UNITS:
            current += _UNITS[word]
        elif word == "hundred":
            current = (current or 1) * 100
        elif word == "thousand":
            total, current = total + (current or 1) * 1000, 0
    return str(total + current)


def mentions(text: str, *, symbol_after: bool = False) -> list[Mention]:
    """Every number `text` writes, read as money or as a name.

    Money: a currency before or after (`$19.50`, `USD 5`, `15 euros`; with `symbol_after`
    also `5$`, `5€`), cents (`500 cents`), or a fraction (`19.50`). Any other number names
    something, so an amount cannot be taken from an id the request named, nor a target from
    the money it named."""
    found: list[Mention] = []
    for match in _NUMBER.finditer(text):
        try:
            value = Decimal(match.group().replace(",", ""))
        except InvalidOperation:
            continue
        before = text[max(0, match.start() - 5) : match.start()]
        after = text[match.end() : match.end() + 12]
        if _CENTS_AFTER.match(after):
            cents, kind = value, "amount"
        elif (
            _CURRENCY_BEFORE.search(before)
            or _CURRENCY_AFTER.match(after)
            or (symbol_after and _SYMBOL_AFTER.match(after))
            or value != value.to_integral_value()
        ):
            cents, kind = value * 100, "amount"
        else:
            cents, kind = value, "name"
        if cents == cents.to_integral_value():
            found.append(Mention(match.start(), int(cents), kind))  # type: ignore[arg-type]
    return found


def asked_regions(text: str, asking: tuple[str, ...]) -> list[Region]:
    """What the request asks, one region per asking word (`asking`: words or the start of
    words, "refund", "reimburs"); one per sentence when the tool names none.

    An asking word asks for the amounts and names after it up to the end of its clause (a
    comma, "but", the sentence's end); where none follows, the nearest before it in the
    sentence ("for order 5903, refund $5"). Numbers of a sentence without an asking word
    are mentioned, not asked."""
    text = spelled_out(text)
    found = mentions(text, symbol_after=True)
    pattern = re.compile("|".join(rf"\b{re.escape(w)}" for w in asking), re.I) if asking else None
    regions: list[Region] = []
    start = 0
    for end in [*(m.end() for m in _SENTENCES.finditer(text)), len(text)]:
        sentence = [m for m in found if start <= m.at < end]
        if pattern is None:
            regions.append(_region(sentence, sentence))
        else:
            for word in pattern.finditer(text, start, end):
                cut = _CUTS.search(text, word.end(), end)
                stop = cut.start() if cut else end
                after = [m for m in sentence if word.end() <= m.at < stop]
                before = [m for m in sentence if m.at < word.start()]
                regions.append(_region(after, before))
        start = end
    return regions


def _region(after: list[Mention], before: list[Mention]) -> Region:
    chosen: dict[Kind, set[int]] = {"amount": set(), "name": set()}
    for kind in ("amount", "name"):
        following = [m.value for m in after if m.kind == kind]
        preceding = [m.value for m in before if m.kind == kind]
        chosen[kind].update(following or preceding[-1:])
    return Region(frozenset(chosen["name"]), frozenset(chosen["amount"]))
