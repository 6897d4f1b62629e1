"""One tenant's vectors in memory: cosine search with FAISS over unit vectors (exact, then HNSW)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import faiss
import numpy as np
import numpy.typing as npt

__all__ = ["Neighbour", "VectorIndex"]


@dataclass(frozen=True)
class Neighbour:
    """A stored question near the one asked; `score` is the cosine similarity."""

    score: float
    question: str
    path_key: str


HNSW_FROM = 20_000
"""Entries from which a tenant's index is approximate (HNSW): below, exact search costs
under a millisecond; at 100k it costs 15-30 ms, HNSW a fraction of one."""
HNSW_M = 32
HNSW_EF_CONSTRUCTION = 80
HNSW_EF_SEARCH = 96
"""Candidates kept while searching: recall against the exact index is measured by
`python -m bench.cache_semantic` (top-1 above the threshold)."""
EXACT_BELOW = 0.8
"""An approximate index rebuilt below this share of `hnsw_from` entries becomes exact."""
REBUILD_TOMBSTONES = 0.10
"""Share of removed entries (still in the graph, skipped at search) that triggers a rebuild."""


class VectorIndex:
    """One tenant's entries: inner-product search over unit vectors, exact (a flat index)
    up to `hnsw_from` entries and approximate (HNSW) beyond.

    HNSW cannot delete: a removed entry stays in the graph as a tombstone, excluded from
    every search by an id selector (so a removed entry is never served), until tombstones
    pass `REBUILD_TOMBSTONES` of the index and it is rebuilt from the live vectors.

    Not safe for a mutation concurrent with a search in another thread: `SemanticIndex`
    serializes them with a lock.
    """

    def __init__(
        self,
        dim: int,
        *,
        hnsw_from: int = HNSW_FROM,
        key_of: Callable[[str], Hashable] | None = None,
    ) -> None:
        """`key_of`: a key of a question that two questions must share to match (their
        literal facts, `guard.facts`); the index counts its entries' keys (`holds_key`)."""
        self.dim = dim
        self._key_of = key_of
        self._keys: Counter[Hashable] = Counter()
        self.hnsw_from = hnsw_from
        self._faiss: Any = faiss.IndexIDMap2(faiss.IndexFlatIP(dim))
        self._approximate = False
        self._tombstones: set[int] = set()
        self._selector: tuple[Any, Any] | None = None
        self._entries: dict[int, tuple[str, str]] = {}  # id -> (question, path_key)

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def approximate(self) -> bool:
        return self._approximate

    def add(
        self,
        ids: Sequence[int],
        vectors: npt.NDArray[np.float32],
        entries: Sequence[tuple[str, str]],
    ) -> None:
        """Add `(question, path_key)` entries under their ids; ids already present, and ids
        removed (a sync re-applying an entry deleted meanwhile), are skipped."""
        keep = [
            i
            for i, entry_id in enumerate(ids)
            if entry_id not in self._entries and entry_id not in self._tombstones
        ]
        if not keep:
            return
        self._faiss.add_with_ids(
            np.ascontiguousarray(vectors[keep], dtype=np.float32),
            np.asarray([ids[i] for i in keep], dtype=np.int64),
        )
        for i in keep:
            self._entries[ids[i]] = entries[i]
            if self._key_of is not None:
                self._keys[self._key_of(entries[i][0])] += 1
        if not self._approximate and len(self._entries) >= self.hnsw_from:
            self._rebuild(approximate=True)

    def remove(self, ids: Iterable[int]) -> int:
        present = [i for i in ids if i in self._entries]
        if not present:
            return 0
        for i in present:
            question, _ = self._entries.pop(i)
            if self._key_of is not None:
                key = self._key_of(question)
                self._keys[key] -= 1
                if self._keys[key] <= 0:
                    del self._keys[key]
        if not self._approximate:
            self._faiss.remove_ids(np.asarray(present, dtype=np.int64))
            return len(present)
        self._tombstones.update(present)
        self._selector = None
        if len(self._tombstones) > REBUILD_TOMBSTONES * (
            len(self._entries) + len(self._tombstones)
        ):
            # Back to exact only well below the switch, not to pay an HNSW build again at
            # the next add.
            self._rebuild(approximate=len(self._entries) >= EXACT_BELOW * self.hnsw_from)
        return len(present)

    def holds_key(self, key: Hashable) -> bool:
        """Whether an entry's question has `key` (always True without a `key_of`)."""
        return self._key_of is None or key in self._keys

    def search(self, vector: npt.NDArray[np.float32], k: int) -> list[Neighbour]:
        if not self._entries or k <= 0:
            return []
        query = np.ascontiguousarray(vector, dtype=np.float32).reshape(1, self.dim)
        k = min(k, len(self._entries))
        if self._approximate:
            params: Any = faiss.SearchParametersHNSW(  # type: ignore[attr-defined]  # no stub
                efSearch=max(HNSW_EF_SEARCH, 2 * k)
            )
            excluded = self._excluded()
            if excluded is not None:
                params.sel = excluded[1]
            scores, ids = self._faiss.search(query, k, params=params)
        else:
            scores, ids = self._faiss.search(query, k)
        return [
            Neighbour(float(score), *self._entries[int(entry_id)])
            for score, entry_id in zip(scores[0], ids[0], strict=True)
            if entry_id >= 0 and int(entry_id) in self._entries
        ]

    def _excluded(self) -> tuple[Any, Any] | None:
        """A selector of every id but the tombstones, made once per change to them. Both
        objects are kept: the outer one holds only a pointer to the inner one."""
        if not self._tombstones:
            return None
        if self._selector is None:
            batch = faiss.IDSelectorBatch(np.fromiter(self._tombstones, dtype=np.int64))
            self._selector = (batch, faiss.IDSelectorNot(batch))
        return self._selector

    def _rebuild(self, *, approximate: bool) -> None:
        """A new index of the live entries (the vectors are read back from the old one)."""
        live = np.fromiter(self._entries, dtype=np.int64, count=len(self._entries))
        vectors = np.vstack([self._faiss.reconstruct(int(i)) for i in live]) if len(live) else None
        if approximate:
            inner: Any = faiss.IndexHNSWFlat(self.dim, HNSW_M, faiss.METRIC_INNER_PRODUCT)
            inner.hnsw.efConstruction = HNSW_EF_CONSTRUCTION
        else:
            inner = faiss.IndexFlatIP(self.dim)
        rebuilt: Any = faiss.IndexIDMap2(inner)
        if vectors is not None:
            rebuilt.add_with_ids(np.ascontiguousarray(vectors, dtype=np.float32), live)
        self._faiss, self._approximate = rebuilt, approximate
        self._tombstones, self._selector = set(), None
