"""The per-tenant vector index: exact when small, HNSW with tombstones when large."""

from __future__ import annotations

import pytest

pytest.importorskip("faiss", reason="the semantic extra is not installed")

import numpy as np

from agentkeel.activities.cache.semantic.vectors import VectorIndex

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


def test_the_tombstone_selector_keeps_results_full(vectors: np.ndarray) -> None:
    """Removed neighbours are skipped inside the graph search, not filtered afterwards: a
    search still returns as many live entries as asked."""
    index = filled(vectors, hnsw_from=1000)
    query = vectors[42]
    nearest = [int(n.path_key[1:]) for n in index.search(query, 9)]
    index.remove(nearest)
    found = index.search(query, 10)
    assert len(found) == 10
    assert not {f"k{i}" for i in nearest} & {n.path_key for n in found}


async def test_searches_never_meet_a_change_in_a_thread(vectors: np.ndarray) -> None:
    """A batch into a large index runs in a worker thread; searches meanwhile answer
    nothing (a miss) instead of reading a graph being changed, and a cancelled change still
    finishes before the tenant's lock is released."""
    import asyncio

    from agentkeel.activities.cache.semantic.index import _mutate, _Tenant

    target = _Tenant(filled(vectors[:1500], hnsw_from=1000), asyncio.Lock())
    extra = unit(np.random.default_rng(5).normal(size=(1500, DIM)))
    ids = list(range(10_000, 11_500))

    async def change() -> None:
        async with target.lock:
            await _mutate(target, len(ids), target.index.add, ids, extra, [("q", "x")] * 1500)

    task = asyncio.create_task(change())
    await asyncio.sleep(0)  # the thread has started
    assert target.changing_in_thread
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert not target.changing_in_thread and not target.lock.locked()
    assert len(target.index) == 3000, "the change finished although its caller was cancelled"
