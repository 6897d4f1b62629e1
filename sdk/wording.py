"""How a domain's questions are worded: how its entities are written (`EntityPattern`) and
its words for the same things (`Vocabulary`).

Apart from `Domain` because only the question readers use them (the semantic guard, the
reading tier of the path cache, speculation), never the tools or the workflow's rules.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

__all__ = ["EntityPattern", "Vocabulary"]


@dataclass(frozen=True)
class EntityPattern:
    """How an entity is written in a question: one regular expression for one argument.

    The semantic guard and the reading tier compare these values literally ("INV-00001"
    against "INV-00002" is a miss); speculation fills `argument` with them.
    """

    argument: str
    """The tool argument the value fills (`invoice_no`, `ticket_id`)."""
    pattern: str
    """Matched case-insensitively on the question; group 1 (or the whole match) is the
    value."""
    normalize: Callable[[str], str | int] | None = None
    """The value's canonical form (`"inv 7"` -> `"INV-00007"`); None: as matched, or an int
    when it is all digits."""
    guard: bool = True
    """Compared by the semantic guard as an identifier; False for a value the guard already
    compares as a number (a ticket number)."""

    def compiled(self) -> re.Pattern[str]:
        return re.compile(self.pattern, re.IGNORECASE)

    def values(self, text: str) -> list[str | int]:
        found: list[str | int] = []
        for match in self.compiled().finditer(text):
            raw = match.group(1) if match.groups() else match.group()
            value: str | int
            if self.normalize is not None:
                value = self.normalize(raw)
            else:
                value = int(raw) if raw.isdigit() else raw
            if value not in found:
                found.append(value)
        return found


@dataclass(frozen=True, eq=False)  # hashed by identity: readings cache by vocabulary
class Vocabulary:
    """The domain's words for the same things, for the reading tier of the path cache
    (`activities.cache.reading`). Without one, the reading tier is off for the domain."""

    concepts: Mapping[str, tuple[str, ...]]
    """Concept -> phrases and words that name it (matched by stem, phrases first)."""
    framing: frozenset[str] = frozenset()
    """Words that frame a question without asking anything ("please", "hi")."""
    general_folds: Mapping[str, str] = field(default_factory=dict)
    """Concepts one when the question names no entity ("close" and "resolve")."""
    particular_folds: Mapping[str, str] = field(default_factory=dict)
    """Concepts one when it names one ("where" and "find" about one item)."""
    actions: frozenset[str] = frozenset()
    """Concepts that act (close, cancel): an order to act is not a question about it."""
    comparisons: frozenset[str] = frozenset()
    """Concepts that only count beside an amount or a number (over, under)."""
