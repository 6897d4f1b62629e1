"""What kind of thing a number of a request is: the currency of an amount, the noun of a name.

From `TARGETS` (`schemas.plan.asked`) a side effect's values are bound by kind as well as by
value: "refund $5 for item 1001 on order 5903" asks a refund on order 5903, not on 1001
(an item), and "refund 5€" asks five euros, which a tool that moves dollar cents cannot
pay as 500 of its own.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
from typing import Protocol, TypeVar

__all__ = ["arg_noun", "currency_fits", "same_noun", "with_kinds"]

_BEFORE = re.compile(
    r"(?:\b(?P<prefix>[a-z]{1,3}))?(?P<sign>[$€£¥₹\uffe1\uff04])\s*$"
    r"|\b(?P<code>usd|eur|gbp|chf|cad|aud|nzd|jpy|inr|mxn|brl|cny|sgd|hkd|sek|nok|dkk|pln|zar"
    r"|try|krw|rub)\s*$",
    re.IGNORECASE,
)
_AFTER = re.compile(
    r"^(?:k\b)?\s?(?P<sign>[$€£¥₹\uffe1\uff04])?\s*(?:(?P<code>[A-Z]{3})\b"
    r"|(?P<country>canadian|australian|aussie|mexican|hong\s+kong|singapore|new\s+zealand"
    r"|taiwan|swiss|us|u\.s\.|american)\s+(?P<unit>dollars?|francs?|pesos?)"
    r"|(?P<word>dollars?|usd|euros?|eur|pounds?|gbp|bucks|quid|chf|cad|aud|yen|jpy|rupees?|inr"
    r"|pesos?|francs?|reais|real|yuan|renminbi|won|krona|kronor|krone|kroner|zloty|rand|lira"
    r"|rubles?|roubles?)\b)?",
    re.IGNORECASE,
)
_SIGNS = {"$": "$", "€": "EUR", "£": "GBP", "\uffe1": "GBP", "\uff04": "$", "¥": "¥", "₹": "INR"}
_PREFIXED = {"us": "USD", "ca": "CAD", "c": "CAD", "au": "AUD", "a": "AUD", "nz": "NZD"}
_PREFIXED |= {"hk": "HKD", "s": "SGD", "mx": "MXN", "r": "BRL", "nt": "TWD"}
_WORDS = {"dollar": "$", "buck": "$", "euro": "EUR", "pound": "GBP", "quid": "GBP"}
_WORDS |= {"yen": "¥", "rupee": "INR", "peso": "MXN", "franc": "CHF", "reais": "BRL"}
_WORDS |= {"real": "BRL", "yuan": "CNY", "renminbi": "CNY", "won": "KRW", "zloty": "PLN"}
_WORDS |= {"rand": "ZAR", "lira": "TRY", "ruble": "RUB", "rouble": "RUB"}
_WORDS |= {"krona": "SEK", "kronor": "SEK", "krone": "NOK", "kroner": "NOK"}
_COUNTRIES = {"canadian": "CAD", "australian": "AUD", "aussie": "AUD", "mexican": "MXN"}
_COUNTRIES |= {"hong kong": "HKD", "singapore": "SGD", "new zealand": "NZD", "taiwan": "TWD"}
_COUNTRIES |= {"swiss": "CHF", "us": "USD", "u.s.": "USD", "american": "USD"}
_FAMILIES = {"$": frozenset({"USD", "CAD", "AUD", "NZD", "HKD", "SGD", "MXN", "TWD"})}
_FAMILIES["¥"] = frozenset({"JPY", "CNY"})
"""A sign several currencies write: `$5` fits a tool moving any dollar's cents."""
_CODES = frozenset(
    "USD EUR GBP CHF CAD AUD NZD JPY INR MXN BRL CNY SGD HKD SEK NOK DKK PLN ZAR TRY KRW RUB"
    " TWD".split()
)
"""ISO codes read after an amount (`$5 CAD`); another three capitals there are no currency."""

_NOUN_BEFORE = re.compile(
    r"(?P<word>[^\W\d_]+)\s*(?:(?:#|no\.?|nr\.?|number|num\.?|id|№)\s*)?[#:(\-№]?\s*$",
    re.IGNORECASE,
)
_JOINS = frozenset({"and", "or", "&", "plus", "also", "then", "maybe", "likewise", "too"})
"""Between two names of a list ("orders 5903 and also 4774"): the second is of the first's
noun."""
_NOT_NOUNS = frozenset(
    "on for of to from in at by with about my your our their his her its the a an this that"
    " is was be are were refund cancel delete please id no number".split()
)
"""Words before a number that say nothing of what it names."""
_ID_SUFFIX = re.compile(r"(?:_?ids?|_no|_nr|_num|_number|_key|_ref)$", re.IGNORECASE)


class _Mention(Protocol):
    @property
    def at(self) -> int: ...

    @property
    def kind(self) -> str: ...


MentionT = TypeVar("MentionT", bound=_Mention)


def with_kinds(text: str, found: Sequence[MentionT], ends: Sequence[int]) -> list[MentionT]:
    """`found` (in the order written; `ends[i]`: where mention i's digits end) with each
    amount's currency and each name's noun (`Mention.currency`, `Mention.noun`)."""
    kinded: list[MentionT] = []
    noun: str | None = None
    last_end = -1
    for mention, end in zip(found, ends, strict=True):
        if mention.kind == "amount":
            currency = _currency(text[max(0, mention.at - 8) : mention.at], text[end : end + 12])
            kinded.append(dataclasses.replace(mention, currency=currency))  # type: ignore[type-var]
            continue
        between = text[last_end : mention.at] if last_end >= 0 else ""
        joined = noun is not None and _only_joins(between)
        noun = noun if joined else _noun(text[max(0, mention.at - 40) : mention.at])
        kinded.append(dataclasses.replace(mention, noun=noun))  # type: ignore[type-var]
        last_end = end
    return kinded


def _currency(before: str, after: str) -> str | None:
    """The currency written beside an amount: an ISO code, a sign several share (`$`,
    `¥`), or None (none written: `19.50`, `500 cents`). A code or a country after the
    amount says which (`$5 CAD`, `5 Canadian dollars`); an unknown prefix of a sign is a
    currency of its own (`R$5`)."""
    written = _AFTER.match(after)
    code = (written.group("code") or "").upper() if written is not None else ""
    if code in _CODES:
        return code
    if written is not None and written.group("country"):
        country = " ".join(written.group("country").casefold().split())
        unit = written.group("unit").casefold().rstrip("s")
        return _COUNTRIES[country] if unit == "dollar" else _WORDS.get(unit, unit.upper())
    sign = _BEFORE.search(before)
    if sign is not None:
        if sign.group("code"):
            return sign.group("code").upper()
        prefix = (sign.group("prefix") or "").casefold()
        if prefix:
            return _PREFIXED.get(prefix, prefix.upper() + "$")
        return _SIGNS[sign.group("sign")]
    if written is None:
        return None
    if written.group("sign"):
        return _SIGNS[written.group("sign")]
    word = (written.group("word") or "").casefold()
    if not word:
        return None
    return _WORDS.get(word if word == "reais" else word.rstrip("s"), word.upper())


def _noun(before: str) -> str | None:
    found = _NOUN_BEFORE.search(before)
    if found is None:
        return None
    word = found.group("word").casefold()
    return None if word in _NOT_NOUNS or word in _JOINS else word


def _only_joins(between: str) -> bool:
    words = [w for w in re.split(r"[\s,]+", between.casefold()) if w]
    return all(w in _JOINS for w in words)


def currency_fits(written: str | None, moved: str | None) -> bool:
    """Whether an amount written in `written` is one a tool moving `moved` cents may take:
    yes where either is not known, or the currencies are one (or `written` is a sign
    `moved` writes)."""
    if written is None or moved is None:
        return True
    moved = moved.upper()
    return written == moved or moved in _FAMILIES.get(written, frozenset())


def arg_noun(argument: str) -> str:
    """What an argument's name says it holds: `order_id` -> "order", `parent_note_id` ->
    "note"; "" where it says nothing (`id`)."""
    stem = _ID_SUFFIX.sub("", argument.casefold())
    words = [w for w in re.split(r"[_\W]+", stem) if w]
    return words[-1] if words else ""


def same_noun(written: str, noun: str) -> bool:
    """`written` (before a number in the request) names a `noun`: "orders" an order, not
    "orderline" (a word of its own)."""
    if not noun:
        return False
    return written in (noun, noun + "s", noun + "es") or noun in (written + "s", written + "es")
