"""What kind of thing a number of a request is: the currency of an amount, the noun of a name.

From `TARGETS` (`schemas.plan.asked`) a side effect's values are bound by kind as well as by
value: "pay $5 for line 1001 of invoice 5903" asks a payment on invoice 5903, not on 1001
(a line), and "pay 5€" asks five euros, which a tool that moves dollar cents cannot pay as
500 of its own.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

__all__ = ["Kind", "Mention", "Region", "arg_noun", "currency_fits", "same_noun", "with_kinds"]

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
"""Between two names of a list ("invoices 5903 and also 4774"): the second is of the first's
noun."""
_NOT_NOUNS = frozenset(
    "on for of to from in at by with about my your our their his her its the a an this that"
    " is was be are were please id no number".split()
)
"""Words before a number that say nothing of what it names (nor do the tool's own verbs:
`schemas.plan.asked`)."""
_ID_SUFFIX = re.compile(r"(?:_?ids?|_no|_nr|_num|_number|_key|_ref)$", re.IGNORECASE)


Kind = Literal["amount", "name"]


@dataclass(frozen=True)
class Mention:
    """A number in the request: an amount (money, in cents) or a name (`invoice 1002`)."""

    at: int
    value: int
    kind: Kind
    currency: str | None = None
    """An amount's currency as written (from `TARGETS`): an ISO code, `$`, `¥`, or None."""
    noun: str | None = None
    """What a name is said to be (from `TARGETS`): "invoice" in "invoice 5903", else None."""


@dataclass(frozen=True)
class Region:
    """What one asking of a request names: the targets and the amounts asked together."""

    named: tuple[Mention, ...]
    """The names asked, with their nouns, and the amounts asked, with their currencies."""
    pairs: frozenset[tuple[int, int]] = frozenset()
    """(name, amount): as many amounts as names pair as written, so "pay $5 on invoice 5903
    and $26.97 on invoice 4774" asks $26.97 on 4774, not on 5903; otherwise each amount
    goes with the name written nearest it."""
    clause: str = ""
    """The asking's own clause (casefolded): where a target written as text must be, for
    a tool that names its asking words ("keep dinner; delete lunch" asks to delete lunch)."""

    @property
    def names(self) -> frozenset[int]:
        return frozenset(m.value for m in self.named if m.kind == "name")

    @property
    def amounts(self) -> frozenset[int]:
        return frozenset(m.value for m in self.named if m.kind == "amount")

    def amounts_in(self, currency: str | None) -> frozenset[int]:
        """The amounts asked that a tool moving `currency` may take (None: every one)."""
        return frozenset(
            m.value
            for m in self.named
            if m.kind == "amount" and currency_fits(m.currency, currency)
        )

    def names_of(self, noun: str) -> frozenset[int]:
        """The names asked as a `noun` (`kinds.arg_noun`): none where no name is."""
        return frozenset(
            m.value for m in self.named if m.kind == "name" and m.noun and same_noun(m.noun, noun)
        )

    def names_for(self, noun: str) -> frozenset[int]:
        """The names an argument holding a `noun` may take: where any name is asked as one,
        every name but those said to be something else ("pay $5 for line 1001 of invoice
        5903": 5903); else every name asked."""
        if not self.names_of(noun):
            return self.names
        other = {m.value for m in self.named if m.noun and not same_noun(m.noun, noun)}
        return self.names - other


def with_kinds(text: str, found: Sequence[Mention], ends: Sequence[int]) -> list[Mention]:
    """`found` (as written, in turn; `ends[i]`: where mention i's digits end) with each
    amount's currency and each name's noun (`Mention.currency`, `Mention.noun`)."""
    kinded: list[Mention] = []
    noun: str | None = None
    last_end = -1
    for mention, end in zip(found, ends, strict=True):
        if mention.kind == "amount":
            currency = _currency(text[max(0, mention.at - 8) : mention.at], text[end : end + 12])
            kinded.append(dataclasses.replace(mention, currency=currency))
            continue
        between = text[last_end : mention.at] if last_end >= 0 else ""
        joined = noun is not None and _only_joins(between)
        noun = noun if joined else _noun(text[max(0, mention.at - 40) : mention.at])
        kinded.append(dataclasses.replace(mention, noun=noun))
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
    """What an argument's name says it holds: `invoice_id` -> "invoice", `parent_note_id` ->
    "note"; "" where it says nothing (`id`)."""
    stem = _ID_SUFFIX.sub("", argument.casefold())
    words = [w for w in re.split(r"[_\W]+", stem) if w]
    return words[-1] if words else ""


def same_noun(written: str, noun: str) -> bool:
    """`written` (before a number in the request) names a `noun`: "invoices" an invoice, not
    "invoiceline" (a word of its own)."""
    if not noun:
        return False
    return written in (noun, noun + "s", noun + "es") or noun in (written + "s", written + "es")
