"""The reading of `ASIDES` (`schemas.plan.asked`): where an asking's own clause stops, and
which asking words ask for nothing (told in the past, or refused).

Plain text rules, deterministic (they run in workflow code) and linear in the request's
length: each sentence's cuts are found once, and every lookahead is bounded.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass

__all__ = ["Clauses", "asks_nothing", "is_question", "refused_spans", "taken_back"]

_STATE_VERBS = r"(?:cost|costs|was|is|were|are|arrived|shipped|came|had|has|totall?ed|charged|paid)"
_CUTS = re.compile(
    r",(?!\s*(?:and\s+|or\s+)?(?:[$€£¥₹]|usd|eur|gbp)?\s*\d)|;"
    r"|\((?!\s*(?:order\s+|no\.?\s*|#)?\d+\s*\))"
    r"|\s(?:but|while|although|though|because|whereas|whilst|since|as|given|considering"
    r"|instead\s+of|rather\s+than|not|which|who|when|after|where|plus)\s|\s[&/+]\s"
    r"|\s(?:and|[-\u2013\u2014])\s+(?=(?:my|the|our|your|their|his|her|its|this|that|another|other)\b)"
    r"|(?:\sand|\s[-\u2013\u2014]|:)\s+(?=(?:[^,;.!?\s]+\s+){0,4}?" + _STATE_VERBS + r"\b)",
    re.I,
)
"""Where an asking's own clause stops: a comma that does not go on with a number, ";", a
parenthesis that is not just a number, a subordinate or contrasting word, "and my ...", and
an "and", dash or colon going on, within five words, to say what something cost or did."""

_NEGATED = re.compile(
    r"\b(?:don[\u2019']?t|do\s+not|never|not|no\s+need\s+to|without|instead\s+of|rather\s+than"
    r"|no)\s+(?:\w+\s+){0,3}$",
    re.I,
)
_NOT_A_REFUSAL = re.compile(r"\b(?:forget|hesitate|fail|why\s+not|only)\b", re.I)
"""`don't forget to refund`, `why not refund`: asking after all."""
_TOLD_BEFORE = re.compile(
    r"\b(?:already|previously|earlier|yesterday|issued|received|got|gave|made|processed"
    r"|did|was|were|had)\s+(?:\w+\s+){0,2}$",
    re.I,
)
"""`you already issued a refund of ...`, `I got a refund of ... last week`."""
_PAST_SUBJECT = re.compile(
    r"\b(?:i|you|we|they|he|she|someone|somebody|already|was|were|had|has|have|been)\s+$", re.I
)
"""Before an asking word in -ed, these tell what happened ("you refunded"); others ask for
it ("get it refunded", "I'd like $5 refunded", "should be refunded")."""
_GAP = r"(?:(?!(?:and|then|but|just|so|please)\b)\S+\s+)"
"""A word between a withdrawal and the asking it governs: none that starts another one."""
_WITHDRAWN = re.compile(
    r"\b(?:cancel|stop|halt|hold\s+off\s+on|avoid|undo|reverse|revoke|withdraw|call\s+off)"
    r"\w*\s+" + _GAP + r"{0,3}$"
    r"|\b(?:won|didn|wouldn|shouldn|doesn|don)[\u2019']?t\s+(?:\w+\s+)?"
    r"(?:want|need|ask|request|expect)\w*\s+" + _GAP + r"{0,2}$"
    r"|\bthanks?(?:\s+you)?\s+for\s+(?:(?:the|my|your|this|that|a|an)\s+)?(?:\w+\s+)?$",
    re.I,
)
"""From `AMENDED` also these ask for nothing: an asking cancelled or held off ("cancel the
refund of ..."), not wanted ("I won't ask for a refund", "I didn't want a refund"), or
thanked for ("thanks for the quick refund of ...")."""
_WORD_GAP = r"(?:(?!(?:and|then|but|just|so|please)\b)[^\s:;\-\u2013\u2014]+\s+)"
"""A word between a drop and the asking it governs: no word starting another, and no dash
or colon going on to something else ("forget the coupon - refund $5" asks)."""
_DROPPED = re.compile(
    r"\b(?:forget(?:\s+about)?|never[\s-]*mind|scrap|scratch|skip|ignore|disregard"
    r"|no\s+need\s+for|no\s+more|nix)\s+" + _WORD_GAP + r"{0,4}$",
    re.I,
)
"""From `TARGETS` also these withdraw an asking: "forget the refund", "never mind the refund
of ...", "scrap the refund", "ignore my previous request to refund", "no need for a
refund" (not after a negation: "don't forget to refund" asks)."""
_KEPT = re.compile(
    r"\b(?:(?:don|won|wouldn|shouldn|didn|couldn|can)[\u2019']?t|do\s+not|never|not|cannot"
    r"|will\s+not)\s+$",
    re.I,
)
_BACK = (
    r"(?:(?:actually|oh|wait|hmm|um|no|ok|okay)[\s,.!\-]+)*"
    r"(?:forget\s+(?:it|that|about\s+(?:it|that))|never[\s-]*mind|nevermind|scratch\s+that"
    r"|cancel\s+that|disregard\s+(?:that|this|it)|ignore\s+(?:that|this|it))"
    r"(?=\s*(?:[.!?;,)]|$))"
)
_TAKEN_BACK = re.compile(r"[\s,;:.!?\-\u2013\u2014]*" + _BACK, re.I)
_TAKEN_BACK_WITHIN = re.compile(r"[,;:.!?(\-\u2013\u2014]\s*" + _BACK, re.I)
"""From `TARGETS`, after an asking's numbers: the asking taken back ("... on order 5903.
Actually, forget it.", "... - never mind"), the phrase ending there ("never mind the
shipping" takes nothing back)."""
_TOLD_OF = re.compile(
    r"\b(?:said|says|told|promised|claimed|wrote|writes)\b(?!\s+(?:\w+\s+)?to\b|\s+please\b)"
    r"\s*[:\"\u201c]?(?:\s+[^\s,;.!?]+){0,6}\s+$",
    re.I,
)
"""From `AMENDED`: an asking someone else told of, in the same clause ("the email said: we
will refund ...", "I was told I'd get a refund"; not "I told you to refund", "support
said to refund")."""
_NAMED_SUBJECT = re.compile(r"\b[A-Z][a-z]+\s+$")
"""From `AMENDED`, before an asking word in -ed: a name's past ("Mary refunded"), read
case-sensitively, as written."""
_QUESTION = re.compile(
    r"^\W*(?!why\s+not\b|how\s+about\b|what\s+about\b)"
    r"(?:how|what|when|why|where|which|does|did|has|have)\b"
    r"(?![^?]*\b(?:can|could|would|will)\s+(?:you|u|someone|somebody)\b)[^?]*\?\W*$",
    re.I,
)
"""From `AMENDED`, a sentence asking about an asking asks for nothing ("how long does a
refund of $30 take?"); one asking for it still asks ("can you refund $5?", "when can you
refund ...?", "what about refunding ...?")."""
_AMOUNT = re.compile(r"[$€£¥₹]?\d[\d.,]*")
_REST_OF_WORD = re.compile(r"\w*")
_LOOK_BACK = 60


def asks_nothing(
    text: str,
    word: re.Match[str],
    start: int,
    clause_start: int | None = None,
    *,
    dropped: bool = False,
) -> bool:
    """Whether the asking word `word` (in the sentence from `start`) is told in the past
    or refused, so it asks for nothing. `clause_start` (from `AMENDED`: where the asking's
    own clause began): also withdrawn, thanked for or told of within that clause;
    `dropped` (from `TARGETS`): also dropped there ("forget the refund")."""
    if clause_start is not None and _amended_nothing(text, word, clause_start):
        return True
    if clause_start is not None and dropped and _dropped(text, word, clause_start):
        return True
    before = text[max(start, word.start() - _LOOK_BACK) : word.start()]
    negated = _NEGATED.search(before)
    if negated is not None and not _NOT_A_REFUSAL.search(before[max(0, negated.start() - 4) :]):
        return True
    if _TOLD_BEFORE.search(before):
        return True
    return _past(text, word) and _PAST_SUBJECT.search(before) is not None


def _amended_nothing(text: str, word: re.Match[str], clause_start: int) -> bool:
    own = text[max(clause_start, word.start() - _LOOK_BACK) : word.start()]
    if _WITHDRAWN.search(own) or _TOLD_OF.search(own):
        return True
    # "my friend got $30 refunded": a told past may hold an amount between it and the word.
    if _TOLD_BEFORE.search(_AMOUNT.sub("it", own)):
        return True
    return _past(text, word) and _NAMED_SUBJECT.search(own) is not None


def _dropped(text: str, word: re.Match[str], clause_start: int) -> bool:
    own = text[max(clause_start, word.start() - _LOOK_BACK) : word.start()]
    found = _DROPPED.search(own)
    return found is not None and _KEPT.search(own, 0, found.start()) is None


def refused_spans(text: str, verbs: tuple[str, ...], start: int, end: int) -> list[tuple[int, int]]:
    """Where, in the sentence `text[start:end]`, one of `verbs` is refused, dropped or told
    in the past: from the refusing words ("don't", "forget", ...; else the clause's start)
    to its clause's end. "delete lunch and don't delete dinner" refuses dinner only."""
    clauses = Clauses.of(text, start, end)
    # "delet" finds delete, deleting and deleted alike.
    stems = [v[:-1] if v.endswith("e") else v for v in verbs]
    found = re.compile("|".join(rf"\b{re.escape(v)}" for v in stems), re.I)
    spans = []
    for word in found.finditer(text, start, end):
        opened = clauses.opened_before(word.start(), start)
        if asks_nothing(text, word, start, opened, dropped=True):
            spans.append((_refusal_start(text, word, opened), clauses.stop_after(word.end())))
    return spans


def _refusal_start(text: str, word: re.Match[str], opened: int) -> int:
    begin = max(opened, word.start() - _LOOK_BACK)
    own = text[begin : word.start()]
    marks = [m.start() for p in (_NEGATED, _DROPPED, _WITHDRAWN) if (m := p.search(own))]
    return begin + min(marks) if marks else opened


def taken_back(text: str, last: int, stop: int) -> bool:
    """Whether the asking whose clause ends at `stop` (its last number at `last`) is taken
    back, after its numbers or right after its clause."""
    if _TAKEN_BACK_WITHIN.search(text, last, stop) is not None:
        return True
    return _TAKEN_BACK.match(text, stop, stop + _LOOK_BACK) is not None


def _past(text: str, word: re.Match[str]) -> bool:
    rest = _REST_OF_WORD.match(text, word.end())
    tail = rest.group() if rest else ""
    return bool(tail) and (word.group() + tail).casefold().endswith("ed")


def is_question(sentence: str) -> bool:
    """Whether `sentence` asks about something rather than for it (`_QUESTION`)."""
    return _QUESTION.match(sentence) is not None


@dataclass(frozen=True)
class Clauses:
    """The cuts of one sentence, found once."""

    starts: list[int]
    ends: list[int]
    sentence_end: int

    @classmethod
    def of(cls, text: str, start: int, end: int) -> Clauses:
        found = list(_CUTS.finditer(text, start, end))
        return cls([m.start() for m in found], [m.end() for m in found], end)

    def stop_after(self, at: int) -> int:
        """Where the clause that goes on from `at` stops (a cut starting at or after it)."""
        i = bisect.bisect_left(self.starts, at)
        return self.starts[i] if i < len(self.starts) else self.sentence_end

    def opened_before(self, at: int, sentence_start: int) -> int:
        """Where the clause holding `at` began (the end of the last cut before it)."""
        i = bisect.bisect_right(self.ends, at)
        return self.ends[i - 1] if i > 0 else sentence_start
