"""Following an append-only Postgres table whose ids may commit out of order.

The semantic index (`semantic.index`) follows the entries and the removals other workers
write by id; a sequence hands ids out at insert, but a lower id may commit after a higher
one was read. Kept apart because the rule for such late rows is the same for both tables
and owes nothing to vectors.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

__all__ = ["GAP_TTL_S", "GAP_WINDOW", "IdCursor"]

GAP_WINDOW = 1_000
"""Ids below the highest seen that are watched for a late commit (see `IdCursor`)."""
GAP_TTL_S = 60.0
"""How long a missing id is watched: longer than any single-row insert stays uncommitted."""


class IdCursor:
    """The highest id seen in an append-only table, and the lower ids not seen yet.

    Ids come from a sequence at insert time, but commits may land out of order: a row
    with a lower id can appear after a higher one was read. Missing ids within
    `GAP_WINDOW` below the highest are asked for again until seen or `GAP_TTL_S` old
    (rolled-back inserts and rows deleted before they were read leave gaps forever).
    """

    def __init__(self) -> None:
        self.last = 0
        self._gaps: dict[int, float] = {}

    def pending(self) -> list[int]:
        cutoff = time.monotonic() - GAP_TTL_S
        self._gaps = {i: t for i, t in self._gaps.items() if t >= cutoff}
        return list(self._gaps)

    def saw(self, ids: Sequence[int]) -> None:
        if not ids:
            return
        now, seen = time.monotonic(), set(ids)
        for i in seen:
            self._gaps.pop(i, None)
        top = max(seen)
        if top > self.last:
            start = max(self.last + 1, top - GAP_WINDOW)
            self._gaps.update((i, now) for i in range(start, top) if i not in seen)
            self.last = top
