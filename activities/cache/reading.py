"""The canonical reading of a question: its literal facts and the concepts its words name.

Embeddings place paraphrases with few words in common far apart ("is shipping free" vs
"do you offer free shipping" is 0.85; "which warehouses have SKU-00001" vs "where is
SKU-00001 stocked" 0.72) and different questions close together ("ship to Singapore" vs
"ship to Sydney"), so no similarity threshold serves most paraphrases and no wrong ones.
A reading compares what the question says instead:

- its facts, exactly as the semantic guard compares them (`semantic.guard.Facts`: ids,
  SKUs, emails, amounts, numbers, months, quantities, negations, follow-ups);
- the set of concepts its content words name, folded by the shop's vocabulary
  (`schemas.tools.vocabulary`), with every word the vocabulary does not know kept as it
  is (stemmed): two questions read the same only when every such word occurs in both.

Equal readings are the same request: the reading tier (`reading_tier`) keys cached paths
by it. A question with no concept left (only framing, or only an id) has no reading, so
"order 1001?" never stands in for "cancel order 1001".
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from functools import cache

import snowballstemmer

from activities.cache.semantic.guard import Facts, facts_and_rest
from schemas.tools.vocabulary import CONCEPTS, FRAMING, GENERAL_FOLDS, PARTICULAR_FOLDS

__all__ = ["Reading", "read", "vocabulary_version"]

READING_VERSION = "r2"
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
    to of in on at for with from by about into onto over under as than then so and or
    if any some all each every own same such just very too also s t d ll m re ve
    get got getting go going put take takes taking come comes
    not no never none nothing nobody neither nor without cannot""".split()
)
"""Negations are among them: the facts count them, so "without" and "with no" read alike."""
_WORD = re.compile(r"[a-z]+(?:'[a-z]+)?")
_PUNCTUATION = re.compile(r"[^\w\s']+")


@dataclass(frozen=True)
class Reading:
    """What a question asks, compared whole: equal readings are the same request."""

    facts: Facts
    concepts: frozenset[str]
    """Concept names, and `w:<stem>` for content words the vocabulary does not fold."""

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
                    f.skus,
                    f.tracking,
                    f.emails,
                    f.money,
                    f.numbers,
                    f.calendar,
                    f.quantities,
                )
            ),
            str(f.negations),
            str(f.follow_up),
        ]
        return hashlib.sha256("\x1f".join(parts).encode()).hexdigest()[:32]


def read(question: str) -> Reading | None:
    """The reading of `question`, or None when no concept is left to compare."""
    found, rest = facts_and_rest(question)
    concepts = _concepts(rest)
    particular = found.skus or found.tracking or found.emails or found.numbers
    folds = PARTICULAR_FOLDS if particular else GENERAL_FOLDS
    concepts = frozenset(folds.get(c, c) for c in concepts)
    if not concepts:
        return None
    return Reading(found, concepts)


def _concepts(text: str) -> frozenset[str]:
    stem = _stemmer().stemWord
    tokens = [stem(w.removesuffix("'s")) for w in _WORD.findall(_PUNCTUATION.sub(" ", text))]
    words = [w for w in tokens if w and not w.endswith("n't")]
    out: set[str] = set()
    phrases, singles = _folding()
    # Phrases first, longest first ("tracking number" before "tracking"), on stems, so
    # "gift cards" is "gift card"; function words inside a phrase ("send it back") count.
    line = " " + " ".join(words) + " "
    for phrase, concepts in phrases:
        if f" {phrase} " in line:
            out.update(concepts)
            line = line.replace(f" {phrase} ", " | ")
    for word in line.split():
        if word == "|" or word in _dropped_stems():
            continue
        out.update(singles.get(word, (f"w:{word}",)))
    return frozenset(out)


@cache
def _stemmer() -> snowballstemmer.stemmer:
    return snowballstemmer.stemmer("english")


@cache
def _dropped_stems() -> frozenset[str]:
    """Function words and the vocabulary's framing words, as stems."""
    return frozenset(_stemmer().stemWords([*FRAMING, *_FUNCTION_WORDS]))


@cache
def _folding() -> tuple[tuple[tuple[str, tuple[str, ...]], ...], dict[str, tuple[str, ...]]]:
    """(stemmed phrases longest first, stem of a single word) -> the concepts they name.
    A concept key joined with `+` ("when+deliver") names each of its parts."""
    phrases: list[tuple[str, tuple[str, ...]]] = []
    singles: dict[str, tuple[str, ...]] = {}
    stem = _stemmer().stemWord
    for key, names in CONCEPTS.items():
        concepts = tuple(key.split("+"))
        for name in names:
            stems = [stem(w) for w in _WORD.findall(name)]
            if len(stems) > 1:
                phrases.append((" ".join(stems), concepts))
            else:
                singles.setdefault(stems[0], concepts)
    phrases.sort(key=lambda item: -len(item[0]))
    return tuple(phrases), singles


@cache
def vocabulary_version() -> str:
    """A digest of the vocabulary: readings made with another one are other keys."""
    described = repr(
        (
            sorted(CONCEPTS.items()),
            sorted(FRAMING),
            sorted(_FUNCTION_WORDS),
            sorted(GENERAL_FOLDS.items()),
            sorted(PARTICULAR_FOLDS.items()),
        )
    )
    return hashlib.sha256(described.encode()).hexdigest()[:12]
