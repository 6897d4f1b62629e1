"""The guard of the semantic tier: a paraphrase may hit, a different question may not.

Embeddings place "refund order 1001" and "refund order 1002" (or a question and its
negation) closer together than most true paraphrases, so no similarity threshold alone
separates them. The guard compares what embeddings blur: the literal facts of the two
questions — identifiers, emails, money amounts, other numbers — and
their negations. Which identifiers a domain writes (part numbers, ticket numbers) is the domain's
to say (`Domain.entity_patterns`). Any difference rejects the candidate: a miss costs one
fresh run, a
false hit serves the answer to another question.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation

from agentkeel.sdk.serving import active_domain

__all__ = ["Facts", "GuardVerdict", "facts", "facts_and_rest", "guard"]


@dataclass(frozen=True)
class GuardVerdict:
    """Whether a semantic candidate may answer the question, and why not when it may not."""

    ok: bool
    reason: str = ""
    differs: tuple[str, ...] = ()
    """What differs ("numbers", "negations", ...), without the values: safe to log."""


@dataclass(frozen=True)
class Facts:
    """What must be equal for two questions to share an answer, normalized."""

    ids: frozenset[str]
    """The domain's identifiers, as `argument:value` (`sku:SKU-00001`)."""
    emails: frozenset[str]
    money: frozenset[str]
    numbers: frozenset[str]
    negations: int
    calendar: frozenset[str] = frozenset()
    """Months and weekdays: "in March" and "in April" ask about different orders."""
    quantities: frozenset[str] = frozenset()
    """All / half / full / partial / every and ordinals (first, second, ..., last, next):
    "refund half" is not "refund all", "the second item" not "the third"."""
    relations: frozenset[str] = frozenset()
    """Before / after / until / since / within / during: when, relative to an event."""
    follow_up: bool = False
    """Asks to be told later or to look again ("tell me when it ships", "check again"): a
    watch, never served by the answer of a question about now."""

    def differences(self, other: Facts) -> dict[str, str]:
        """What differs -> the two values, `self` first; empty when the facts agree."""
        diffs = {
            name: f"{_show(mine)} vs {_show(theirs)}"
            for name, mine, theirs in (
                ("identifiers", self.ids, other.ids),
                ("emails", self.emails, other.emails),
                ("amounts", self.money, other.money),
                ("numbers", self.numbers, other.numbers),
                ("calendar", self.calendar, other.calendar),
                ("quantities", self.quantities, other.quantities),
                ("relations", self.relations, other.relations),
            )
            if mine != theirs
        }
        if self.negations != other.negations:
            diffs["negations"] = f"{self.negations} vs {other.negations}"
        if self.follow_up != other.follow_up:
            diffs["follow-up"] = f"{self.follow_up} vs {other.follow_up}"
        return diffs


# Matched and cut out in this order, so that the digits of an identifier, an email or an
# amount are not counted again as a bare number.
_EMAIL = re.compile(r"(?<![\w.+-])[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
_NUM = r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?"
_MONEY = re.compile(
    rf"(?:[$€£¥]|\b(?:usd|eur|gbp|sgd|myr)\s*)\s*({_NUM})"
    rf"|\b({_NUM})\s*(?:[$€£¥]|(?:usd|eur|gbp|sgd|myr|dollars?|euros?|pounds?|bucks|cents?)\b)"
)
# Every digit run counts, inside words too ("WH-1000XM4" vs "WH-1000XM5"): paraphrases
# carry the same digits, and a number that differs must reject.
_NUMBER = re.compile(_NUM)
_NEGATION = re.compile(
    # "no" but not "order no. 1001"; bare "\w+nt" is filtered by _BARE_CONTRACTIONS.
    r"\b(?:not|no(?!\.?\s*#?\d)|never|none|nothing|nobody|nowhere|neither|nor|without|"
    r"cannot|\w+n't|\w+nt|unable|fail(?:s|ed)?\s+to)\b"
)
# Contractions written without the apostrophe: only those that are not also words.
_BARE_CONTRACTIONS = frozenset(
    {
        "dont", "doesnt", "didnt", "isnt", "arent", "wasnt", "werent", "cant", "couldnt",
        "wont", "wouldnt", "shouldnt", "hasnt", "havent", "hadnt", "aint", "mustnt",
    }
)  # fmt: skip


_NEGATED_WORD = re.compile(
    # "non-refundable", "unopened": a negation inside one word flips the question too.
    r"\bnon-?[a-z]{3,}|\bun(?:opened|used|paid|shipped|delivered|available|refundable|"
    r"returnable|damaged|worn|sealed|authorized|authorised|registered)\b"
)
_CALENDAR = re.compile(
    r"\b(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|"
    r"sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?|monday|tuesday|wednesday|"
    r"thursday|friday|saturday|sunday|today|tomorrow|yesterday|weekend)\b"
)
_QUANTITY = re.compile(
    r"\b(?:all|half|whole|full|partial(?:ly)?|part|every|each|both|"
    # Ordinals pick one of several: "the second item" is not "the third item".
    r"first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|last|next|previous|"
    r"penultimate)\b"
)
_RELATION = re.compile(
    # Before, after, until...: "cancel after it ships" and "before it ships" are two
    # questions that share every other word.
    r"\b(?:before|after|until|till|since|within|during|prior to|later than|earlier than|"
    r"no later than)\b"
)
_FOLLOW_UP = re.compile(
    r"\b(?:tell|notify|let|alert|remind|ping|inform|update|message)\b[^.?!]*?"
    r"\b(?:when|once|as soon as|the moment|whenever)\b|\bwatch\b|\bkeep an eye\b|"
    r"\bkeep me (?:posted|updated)\b|\bagain\b|\blater\b"
)
_UNITS = {
    w: i
    for i, w in enumerate(
        "zero one two three four five six seven eight nine ten eleven twelve thirteen "
        "fourteen fifteen sixteen seventeen eighteen nineteen".split()
    )
}
_TENS = {
    w: 10 * i
    for i, w in enumerate("_ _ twenty thirty forty fifty sixty seventy eighty ninety".split())
    if i > 1
}
_SCALES = {"hundred": 100, "thousand": 1000, "million": 1_000_000}
_NUMBER_WORDS = re.compile(
    r"\b(?:(?:" + "|".join([*_UNITS, *_TENS, *_SCALES]) + r")(?:[\s-]+(?:and[\s-]+)?)?)+\b"
)


def _words_to_digits(text: str) -> str:
    """ "one thousand and one" -> "1001", so spelled-out numbers are compared as numbers."""

    def convert(match: re.Match[str]) -> str:
        total = current = 0
        for word in re.split(r"[\s-]+", match.group().strip()):
            if word in _UNITS:
                current += _UNITS[word]
            elif word in _TENS:
                current += _TENS[word]
            elif word == "hundred":
                current = max(current, 1) * 100
            elif word in _SCALES:
                total += max(current, 1) * _SCALES[word]
                current = 0
        return f" {total + current} "

    return _NUMBER_WORDS.sub(convert, text)


def _show(values: frozenset[str]) -> str:
    return "{" + ", ".join(sorted(values)) + "}" if values else "{}"


def _number(text: str) -> str:
    """`1,000` and `1000.00` are `1000`; `0042` is `42`."""
    try:
        value = Decimal(text.replace(",", ""))
    except InvalidOperation:
        return text
    return format(value.normalize(), "f")


def _cut(pattern: re.Pattern[str], text: str) -> tuple[list[re.Match[str]], str]:
    found = list(pattern.finditer(text))
    return found, pattern.sub(" ", text)


def facts(question: str) -> Facts:
    """The facts of `question` the guard compares (see `Facts`)."""
    return facts_and_rest(question)[0]


def facts_and_rest(question: str) -> tuple[Facts, str]:
    """`facts`, and the casefolded question with its identifiers, emails, amounts and
    numbers cut out: the words left to compare (`activities.cache.reading`)."""
    text = unicodedata.normalize("NFKC", question).casefold().replace("\u2019", "'")
    negations = sum(
        1
        for m in _NEGATION.finditer(text)
        if not m.group().endswith("nt") or m.group() in _BARE_CONTRACTIONS
    ) + len(_NEGATED_WORD.findall(text))
    calendar = frozenset(m.group()[:3] for m in _CALENDAR.finditer(text))
    quantities = frozenset(m.group() for m in _QUANTITY.finditer(text))
    relations = frozenset(m.group() for m in _RELATION.finditer(text))
    follow_up = bool(_FOLLOW_UP.search(text))
    text = _words_to_digits(text)
    ids: set[str] = set()
    for pattern in active_domain().entity_patterns:
        if pattern.guard:
            ids.update(f"{pattern.argument}:{v}" for v in pattern.values(text))
            text = pattern.compiled().sub(" ", text)
    emails, text = _cut(_EMAIL, text)
    money, text = _cut(_MONEY, text)
    numbers, text = _cut(_NUMBER, text)
    found = Facts(
        ids=frozenset(ids),
        emails=frozenset(m.group() for m in emails),
        money=frozenset(_number(m.group(1) or m.group(2)) for m in money),
        numbers=frozenset(_number(m.group()) for m in numbers),
        negations=negations,
        calendar=calendar,
        quantities=quantities,
        relations=relations,
        follow_up=follow_up,
    )
    return found, text


def guard(question: str, candidate: str) -> GuardVerdict:
    """May the answer cached for `candidate` serve `question`?

    Rejects when the identifiers (the domain's), emails, money amounts, other numbers (order
    numbers such as `1001`, `#1001` or "one thousand and one"), months and weekdays,
    quantities (all, half, first, second, ...), relations in time (before, after, until,
    ...), the count of negations (not, no, never, n't,
    without, cannot, non-..., un-opened, ...) or whether they ask to be told later
    ("tell me when", "check again") of the two differ.
    """
    diffs = facts(question).differences(facts(candidate))
    if diffs:
        reason = "; ".join(f"{name} differ: {values}" for name, values in diffs.items())
        return GuardVerdict(ok=False, reason=reason, differs=tuple(diffs))
    return GuardVerdict(ok=True)
