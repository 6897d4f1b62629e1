"""Reading a request as people write it: which numbers are money, which name something, and
which of them the request asks a side effect to act on rather than merely mentions.

"my other order 4774 cost $26.97 ... refund $5 on order 5903" mentions order 4774 and
$26.97, and asks for $5 on order 5903: a refund of $26.97 on order 4774 is not what it
asks. Plain text rules (deterministic: they run in workflow code), kept to what the core
can know of any domain; the words that ask for a side effect are the tool's own.
"""

from __future__ import annotations

import re
from dataclasses import replace
from decimal import Decimal, InvalidOperation

from agentkeel.schemas.plan.asides import (
    Clauses,
    asks_nothing,
    is_question,
    refused_spans,
    taken_back,
)
from agentkeel.schemas.plan.kinds import Kind, Mention, Region, with_kinds
from agentkeel.schemas.plan.readings import (
    CENTS_AFTER,
    CUTS_V1,
    DECIMAL_COMMA,
    READINGS,
    THOUSANDS_AFTER,
    words_value,
)
from agentkeel.schemas.plan.second_thoughts import SecondThoughts

__all__ = [
    "AMENDED",
    "ASIDES",
    "TARGETS",
    "Mention",
    "Region",
    "asked_regions",
    "mentions",
    "spelled_out",
]

_SENTENCES = re.compile(r"\.{2,}|…|(?<!\bno)(?<!\bNo)(?<!\bnr)[.!?](?=\s|$)(?!\s*#?\d)|\n")

ASIDES = 3
"""The `rules` (`schemas.plan.provenance.TrustedFacts.rules`) from which a request is read
with asides, past and refused askings, each amount paired with its own target, decimal
commas, `$5k`, more currencies and `one hundred and five`; 2 reads as `provenance-asked-v1`
recorded (and 1, the numbers alone, as before it)."""
AMENDED = 4
"""From here an asking's corrected amounts and the prices it tells of its target are not
asked (`schemas.plan.second_thoughts`)."""
TARGETS = 5
"""From here each amount carries its currency and each name its noun (`schemas.plan.kinds`):
a side effect takes only amounts in the currency it moves, and targets of its own kind."""


def spelled_out(text: str, rules: int = ASIDES) -> str:
    """`text` with numbers written in words as digits: "five dollars" is "5 dollars"."""
    words = READINGS[rules >= ASIDES].number_words
    return words.sub(lambda m: words_value(m.group()), text)


def mentions(text: str, *, symbol_after: bool = False, rules: int = ASIDES) -> list[Mention]:
    """Every number `text` writes, read as money or as a name.

    Money: a currency before or after (`$19.50`, `USD 5`, `15 euros`; with `symbol_after`
    also `5$`, `5€`), cents (`500 cents`), or a fraction (`19.50`). Any other number names
    something, so an amount cannot be taken from an id the request named, nor a target from
    the money it named."""
    reading = READINGS[rules >= ASIDES]
    found: list[Mention] = []
    ends: list[int] = []
    for match in reading.number.finditer(text):
        written = match.group()
        before = text[max(0, match.start() - 5) : match.start()]
        after = text[match.end() : match.end() + 12]
        thousands = reading.asides and bool(THOUSANDS_AFTER.match(after))
        after = after[1:] if thousands else after
        money = bool(
            reading.currency_before.search(before)
            or reading.currency_after.match(after)
            or (symbol_after and reading.symbol_after.match(after))
        )
        if reading.asides and DECIMAL_COMMA.match(written):
            if not money:  # "orders 5,50": two numbers
                whole, part = written.split(",")
                found.append(Mention(match.start(), int(whole), "name"))
                found.append(Mention(match.start() + len(whole) + 1, int(part), "name"))
                ends += [match.start() + len(whole), match.end()]
                continue
            written = written.replace(",", ".")
        try:
            value = Decimal(written.replace(",", ""))
        except InvalidOperation:
            continue
        if thousands:
            value *= 1000
        if CENTS_AFTER.match(after):
            cents, kind = value, "amount"
        elif money or value != value.to_integral_value():
            cents, kind = value * 100, "amount"
        else:
            cents, kind = value, "name"
        if cents == cents.to_integral_value():
            found.append(Mention(match.start(), int(cents), kind))  # type: ignore[arg-type]
            ends.append(match.end())
    return with_kinds(text, found, ends) if rules >= TARGETS else found


def asked_regions(
    text: str, asking: tuple[str, ...], rules: int = ASIDES, refusing: tuple[str, ...] = ()
) -> list[Region]:
    """What the request asks, one region per asking word (`asking`: words or the start of
    words, "refund", "reimburs"); one per sentence when the tool names none, less (from
    `TARGETS`) the clauses where a `refusing` verb is refused ("don't delete note A").

    An asking word asks for the amounts and names after it up to the end of its clause (a
    comma, "but", the sentence's end); where none follows, the nearest before it in the
    sentence ("for order 5903, refund $5"). Numbers of a sentence without an asking word
    are mentioned, not asked."""
    reading = READINGS[rules >= ASIDES]
    text = spelled_out(text, rules)
    found = mentions(text, symbol_after=True, rules=rules)
    if rules >= TARGETS:  # the tool's own verbs say nothing of what a number names
        verbs = tuple(w.casefold() for w in (*asking, *refusing))
        found = [replace(m, noun=None) if m.noun and m.noun.startswith(verbs) else m for m in found]
    pattern = re.compile("|".join(rf"\b{re.escape(w)}" for w in asking), re.I) if asking else None
    regions: list[Region] = []
    start = 0
    for end in [*(m.end() for m in _SENTENCES.finditer(text)), len(text)]:
        sentence = [m for m in found if start <= m.at < end]
        if pattern is None and refusing and rules >= TARGETS:
            regions.append(_unrefused(text, refusing, sentence, (start, end)))
        elif pattern is None:
            regions.append(_region(sentence, sentence, reading.asides, text[start:end]))
        elif reading.asides:
            regions += _asides_regions(text, pattern, sentence, (start, end), rules)
        else:
            for word in pattern.finditer(text, start, end):
                cut = CUTS_V1.search(text, word.end(), end)  # (`asides.Clauses` from rules 3)
                stop = cut.start() if cut else end
                after = [m for m in sentence if word.end() <= m.at < stop]
                before = [m for m in sentence if m.at < word.start()]
                regions.append(_region(after, before, False, ""))
        start = end
    return regions


def _asides_regions(
    text: str,
    pattern: re.Pattern[str],
    sentence: list[Mention],
    span: tuple[int, int],
    rules: int,
) -> list[Region]:
    """One sentence's regions as `ASIDES` reads it: an asking told in the past or refused
    asks nothing; one whose own clause lacks a target or an amount takes the nearest before
    it in the sentence, else the first after its clause, before the next asking word.
    From `AMENDED` less its corrected amounts and the prices it tells; from `TARGETS` with
    more corrections and dropped askings read."""
    start, end = span
    amended = rules >= AMENDED
    if amended and is_question(text[start:end]):
        return []
    clauses = Clauses.of(text, start, end)
    words = list(pattern.finditer(text, start, end))
    amounts = [m for m in sentence if m.kind == "amount"]
    thoughts = SecondThoughts.of(text, amounts, more=rules >= TARGETS) if amended else None
    regions = []
    for i, word in enumerate(words):
        opened = clauses.opened_before(word.start(), start)
        if asks_nothing(text, word, start, opened if amended else None, dropped=rules >= TARGETS):
            continue
        stop = clauses.stop_after(word.end())
        following = words[i + 1].start() if i + 1 < len(words) else end
        if rules >= TARGETS:  # its own numbers end where the next asking begins
            stop = min(stop, following)
        after = [m for m in sentence if word.end() <= m.at < stop]
        if rules >= TARGETS and taken_back(text, max([word.end(), *map(_at, after)]), stop):
            continue
        before = [m for m in sentence if m.at < word.start()]
        later = [m for m in sentence if stop <= m.at < following]
        if thoughts is not None:
            amounts = thoughts.asked(
                [m for m in after if m.kind == "amount"], [m for m in later if m.kind == "amount"]
            )
            after = sorted([*(m for m in after if m.kind == "name"), *amounts], key=_at)
        clause = text[opened:stop]
        regions.append(_region(after, before, True, clause, later))
    return regions


def _unrefused(
    text: str, refusing: tuple[str, ...], sentence: list[Mention], span: tuple[int, int]
) -> Region:
    """One sentence's region for a tool that names no asking words: all of it but where
    one of its `refusing` verbs is refused, dropped or told in the past."""
    start, end = span
    cuts = refused_spans(text, refusing, start, end)
    kept = [m for m in sentence if not any(a <= m.at < b for a, b in cuts)]
    pieces, at = [], start
    for a, b in cuts:
        pieces.append(text[at:a])
        at = max(at, b)
    pieces.append(text[at:end])
    return _region(kept, kept, True, " | ".join(pieces))


def _at(mention: Mention) -> int:
    return mention.at


def _region(
    after: list[Mention],
    before: list[Mention],
    paired: bool,
    clause: str,
    later: list[Mention] | None = None,
) -> Region:
    chosen: dict[Kind, list[Mention]] = {}
    for kind in ("amount", "name"):
        following = [m for m in after if m.kind == kind]
        preceding = [m for m in before if m.kind == kind]
        afterwards = [m for m in later or () if m.kind == kind]
        chosen[kind] = following or preceding[-1:] or afterwards[:1]
    names, amounts = chosen["name"], chosen["amount"]
    if not paired:
        pairs: set[tuple[int, int]] = set()
    elif len(amounts) == 1:  # "refund $5 each on orders 5903 and 4774"
        pairs = {(n.value, amounts[0].value) for n in names}
    elif len(names) == len(amounts):  # "$5 on order 5903 and $26.97 on order 4774": in order
        pairs = {(n.value, a.value) for n, a in zip(names, amounts, strict=True)}
    else:
        pairs = {
            (min(names, key=lambda n: abs(n.at - a.at)).value, a.value) for a in amounts if names
        }
    return Region((*names, *amounts), frozenset(pairs), clause.casefold() if paired else "")
