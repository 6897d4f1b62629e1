"""The per-tenant vector index: exact when small, HNSW with tombstones when large."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("faiss", reason="the semantic extra is not installed")

from activities.cache.semantic.vectors import VectorIndex

DIM = 64


def unit(rows: np.ndarray) -> np.ndarray:
    return (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)


@pytest.fixture
def vectors() -> np.ndarray:
    return unit(np.random.default_rng(7).normal(size=(3000, DIM)))


def filled(vectors: np.ndarray, hnsw_from: int) -> VectorIndex:
    index = VectorIndex(DIM, hnsw_from=hnsw_from)
    ids = list(range(len(vectors)))
    index.add(ids, vectors, [(f"q{i}", f"k{i}") for i in ids])
    return index


def test_small_indexes_are_exact_and_large_ones_approximate(vectors: np.ndarray) -> None:
    assert not filled(vectors, hnsw_from=5000).approximate
    index = filled(vectors, hnsw_from=1000)
    assert index.approximate and len(index) == len(vectors)
    found = [index.search(vectors[i], 1)[0].path_key for i in range(300)]
    assert found == [f"k{i}" for i in range(300)], "an entry is its own nearest neighbour"


def test_a_removed_entry_is_never_served_and_tombstones_are_reclaimed(
    vectors: np.ndarray,
) -> None:
    index = filled(vectors, hnsw_from=1000)
    assert index.remove([0, 1, 2, 99_999]) == 3
    for i in (0, 1, 2):
        assert f"k{i}" not in [n.path_key for n in index.search(vectors[i], 10)]
    index.remove(range(3, 400))  # past a tenth of the index: rebuilt without them
    assert index.approximate and len(index) == 2600
    assert index.search(vectors[500], 1)[0].path_key == "k500"
    index.remove(range(400, 2500))  # small again: back to exact search
    assert not index.approximate and len(index) == 500
    assert index.search(vectors[2900], 1)[0].path_key == "k2900"


def test_top1_recall_against_the_exact_index_for_close_matches(vectors: np.ndarray) -> None:
    """Paraphrase-like queries (cosine >= 0.9 to a stored entry): the approximate index
    finds the exact index's best match for at least 98 % of them."""
    rng = np.random.default_rng(11)
    approximate, exact = filled(vectors, hnsw_from=1000), filled(vectors, hnsw_from=10**9)
    picks = rng.integers(0, len(vectors), 400)
    queries = unit(vectors[picks] + rng.normal(0, 0.04, (len(picks), DIM)))
    agree = close = 0
    for query in queries:
        best = exact.search(query, 1)[0]
        if best.score < 0.9:
            continue
        close += 1
        agree += approximate.search(query, 1)[0].path_key == best.path_key
    assert close > 300
    assert agree / close >= 0.98
