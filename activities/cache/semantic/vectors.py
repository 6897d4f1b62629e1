"""One tenant's vectors in memory: exact cosine search with FAISS over unit vectors."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
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


class VectorIndex:
    """One tenant's entries: exact inner-product search over unit vectors.

    Not safe for a mutation concurrent with a search in another thread: `SemanticIndex`
    serializes them with a lock.
    """

    def __init__(self, dim: int) -> None:
        self.dim = dim
        self._faiss: Any = faiss.IndexIDMap2(faiss.IndexFlatIP(dim))
        self._entries: dict[int, tuple[str, str]] = {}  # id -> (question, path_key)

    def __len__(self) -> int:
        return len(self._entries)

    def add(
        self,
        ids: Sequence[int],
        vectors: npt.NDArray[np.float32],
        entries: Sequence[tuple[str, str]],
    ) -> None:
        """Add `(question, path_key)` entries under their ids; ids already present are skipped."""
        keep = [i for i, entry_id in enumerate(ids) if entry_id not in self._entries]
        if not keep:
            return
        self._faiss.add_with_ids(
            np.ascontiguousarray(vectors[keep], dtype=np.float32),
            np.asarray([ids[i] for i in keep], dtype=np.int64),
        )
        for i in keep:
            self._entries[ids[i]] = entries[i]

    def remove(self, ids: Iterable[int]) -> int:
        present = [i for i in ids if i in self._entries]
        if present:
            self._faiss.remove_ids(np.asarray(present, dtype=np.int64))
            for i in present:
                del self._entries[i]
        return len(present)

    def search(self, vector: npt.NDArray[np.float32], k: int) -> list[Neighbour]:
        if not self._entries or k <= 0:
            return []
        query = np.ascontiguousarray(vector, dtype=np.float32).reshape(1, self.dim)
        scores, ids = self._faiss.search(query, min(k, len(self._entries)))
        return [
            Neighbour(float(score), *self._entries[int(entry_id)])
            for score, entry_id in zip(scores[0], ids[0], strict=True)
            if entry_id >= 0
        ]
