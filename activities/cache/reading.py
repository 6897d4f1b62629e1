"""The canonical reading of a question: its literal facts and the concepts its words name.

Embeddings place paraphrases with few words in common far apart ("is shipping free" vs
"do you offer free shipping" is 0.85; "which warehouses have SKU-00001" vs "where is
SKU-00001 stocked" 0.72) and different questions close together ("ship to Singapore" vs
"ship to Sydney"), so no similarity threshold serves most paraphrases and no wrong ones.
A reading compares what the question says instead:

- its facts, exactly as the semantic guard compares them (`semantic.guard.Facts`: the
  domain's identifiers, emails, amounts, numbers, months, quantities, negations, follow-ups);
- the set of concepts its content words name, folded by the shop's vocabulary
  (`Domain.vocabulary`), with every word the vocabulary does not know kept as it
  is (stemmed): two questions read the same only when every such word occurs in both.

Equal readings are the same request: the reading tier (`reading_tier`) keys cached paths
by it. A question with no concept left (only framing, or only an id) has no reading, so
"order 1001?" never stands in for "cancel order 1001".
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from dataclasses import dataclass
from functools import cache

import snowballstemmer

from agentkeel.activities.cache.semantic.guard import Facts, facts_and_rest
from agentkeel.sdk.domain import Vocabulary
from agentkeel.sdk.serving import active_domain

__all__ = ["Reading", "orders_action", "read", "vocabulary_version"]

READING_VERSION = "r3"
"""Bumped when how a reading is made changes: part of every reading key."""

# Function words of English questions: they frame what is asked, they do not ask it. Not
# here on purpose: the words that change an answer (before/after/until/since/within,
# ordinals, negations, which the facts count) and the question words the vocabulary gives
# a concept (where, when, why, how long, how much).
_FUNCTION_WORDS = frozenset(
    """a an the this that these those it its it's i i'm i've i'd me my mine myself we our
    us you your you're yours he she him her his they them their there here what what's
    whats which who whom whose how how's hows is are was were be been being am do does
    did done doing have has had having can could will would shall should may might must
    to of in on at for with from by about into onto as than then so and or
    if any some all each every own same such just very too also s t d ll m re ve
    get got getting go going put take takes taking come comes
    not no never none nothing nobody neither nor without cannot""".split()
)
"""Negations are among them: the facts count them, so "without" and "with no" read alike."""
_WORD = re.compile(r"[a-z]+(?:'[a-z]+)?")
_QUESTION = re.compile(
    r"\?|^\W*(?:can|could|may|might|is|are|was|were|do|does|did|how|what|when|where|why|"
    r"will|would|should|shall|must|has|have|had|am|need|which|who|whose)\b"
)
"""A question asks about something; a request in the imperative (or "I want ...") acts."""
_PUNCTUATION = re.compile(r"[^\w\s']+")


@dataclass(frozen=True)
class Reading:
    """What a question asks, compared whole: equal readings are the same request."""

    facts: Facts
    concepts: frozenset[str]
    """Concept names, and `w:<stem>` for content words the vocabulary does not fold."""
    unknown_order: tuple[str, ...] = ()
    """With two or more unfolded words, their order: "from Berlin to Paris" is not "from
    Paris to Berlin"."""
    asks: bool | None = None
    """Whether it is a question, for a request that names an action (refund, cancel, ...):
    "can I get a refund for order 1003?" asks about one, "refund order 1003" orders one."""

    def digest(self) -> str:
        """A stable key of the reading (the vocabulary's version included)."""
        f = self.facts
        parts = [
            READING_VERSION,
            vocabulary_version(),
            ",".join(sorted(self.concepts)),
            *(
                ",".join(sorted(values))
                for values in (
                    f.ids,
                    f.emails,
                    f.money,
                    f.numbers,
                    f.calendar,
                    f.quantities,
                )
            ),
            str(f.negations),
            str(f.follow_up),
            ",".join(self.unknown_order),
            str(self.asks),
        ]
        return hashlib.sha256("\x1f".join(parts).encode()).hexdigest()[:32]


def read(question: str) -> Reading | None:
    """The reading of `question`, or None when there is nothing safe to compare: no concept
    left, or two values of one kind (two orders, two amounts), whose roles a set of facts
    cannot tell apart ("refund 1001, cancel 1002" against "cancel 1001, refund 1002")."""
    words = _vocabulary()
    if words is None:
        return None  # a domain without a vocabulary has no reading tier
    found, rest = facts_and_rest(question)
    id_kinds = [v.split(":", 1)[0] for v in found.ids]
    kinds = (found.emails, found.money, found.numbers)
    if len(id_kinds) != len(set(id_kinds)) or any(len(values) > 1 for values in kinds):
        return None
    concepts, unknown = _concepts(rest)
    particular = found.ids or found.emails or found.numbers
    folds = words.particular_folds if particular else words.general_folds
    concepts = frozenset(folds.get(c, c) for c in concepts)
    if not (found.money or found.numbers):
        concepts -= words.comparisons
    if not concepts:
        return None
    # Only about a particular order or item can a request act; about none it only asks.
    asks = _asks(question) if particular and concepts & words.actions else None
    return Reading(found, concepts, tuple(unknown) if len(unknown) > 1 else (), asks)


def orders_action(question: str) -> bool:
    """Whether `question` tells the agent to act on a particular order or item (not a
    question about doing so): the semantic tier may not serve it a question's answer."""
    reading = read(question)
    return reading is not None and reading.asks is False


def _asks(question: str) -> bool:
    return bool(_QUESTION.search(unicodedata.normalize("NFKC", question).casefold()))


def _concepts(text: str) -> tuple[frozenset[str], list[str]]:
    """The concepts of `text`, and its unfolded words in order (each once)."""
    stem = _stemmer().stemWord
    tokens = [stem(w.removesuffix("'s")) for w in _WORD.findall(_PUNCTUATION.sub(" ", text))]
    words = [w for w in tokens if w and not w.endswith("n't")]
    out: set[str] = set()
    phrases, singles = _folding()
    # Phrases first, longest first ("due date" before "due"), on stems, so
    # "gift cards" is "gift card"; function words inside a phrase ("send it back") count.
    line = " " + " ".join(words) + " "
    for phrase, concepts in phrases:
        if f" {phrase} " in line:
            out.update(concepts)
            line = line.replace(f" {phrase} ", " | ")
    unknown: list[str] = []
    for word in line.split():
        if word == "|" or word in _dropped_stems():
            continue
        folded = singles.get(word)
        if folded is None:
            out.add(f"w:{word}")
            if word not in unknown:
                unknown.append(word)
        else:
            out.update(folded)
    return frozenset(out), unknown


def _vocabulary() -> Vocabulary | None:
    return active_domain().vocabulary


@cache
def _stemmer() -> snowballstemmer.stemmer:
    return snowballstemmer.stemmer("english")


def _dropped_stems() -> frozenset[str]:
    """Function words and the vocabulary's framing words, as stems."""
    return _dropped_stems_of(_vocabulary_or_empty())


@cache
def _dropped_stems_of(words: Vocabulary) -> frozenset[str]:
    return frozenset(_stemmer().stemWords([*words.framing, *_FUNCTION_WORDS]))


_NO_VOCABULARY = Vocabulary(concepts={})


def _vocabulary_or_empty() -> Vocabulary:
    return _vocabulary() or _NO_VOCABULARY


def _folding() -> tuple[tuple[tuple[str, tuple[str, ...]], ...], dict[str, tuple[str, ...]]]:
    """(stemmed phrases longest first, stem of a single word) -> the concepts they name.
    A concept key joined with `+` ("when+deliver") names each of its parts."""
    return _folding_of(_vocabulary_or_empty())


@cache
def _folding_of(
    words: Vocabulary,
) -> tuple[tuple[tuple[str, tuple[str, ...]], ...], dict[str, tuple[str, ...]]]:
    phrases: list[tuple[str, tuple[str, ...]]] = []
    singles: dict[str, tuple[str, ...]] = {}
    stem = _stemmer().stemWord
    for key, names in words.concepts.items():
        concepts = tuple(key.split("+"))
        for name in names:
            stems = [stem(w) for w in _WORD.findall(name)]
            if len(stems) > 1:
                phrases.append((" ".join(stems), concepts))
            else:
                singles.setdefault(stems[0], concepts)
    phrases.sort(key=lambda item: -len(item[0]))
    return tuple(phrases), singles


def vocabulary_version() -> str:
    """A digest of the vocabulary: readings made with another one are other keys."""
    return _vocabulary_digest(_vocabulary_or_empty())


@cache
def _vocabulary_digest(words: Vocabulary) -> str:
    described = repr(
        (
            sorted(words.concepts.items()),
            sorted(words.framing),
            sorted(_FUNCTION_WORDS),
            sorted(words.general_folds.items()),
            sorted(words.particular_folds.items()),
            sorted(words.actions),
            sorted(words.comparisons),
        )
    )
    return hashlib.sha256(described.encode()).hexdigest()[:12]
