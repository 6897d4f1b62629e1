"""The semantic tier of the path cache: a paraphrase of a cached question finds its path.

`SemanticCache.lookup` embeds the question, takes the nearest stored questions of the
tenant, and returns the best one that is at least `threshold` similar AND passes the
guard (`activities.cache.semantic.guard`): same numbers, IDs, emails, SKUs, amounts, negations.
What it returns is a path key; the caller fetches the path from the exact tier, so an
entry whose path has expired or been invalidated there is a miss, never a stale answer.

Default threshold, from the labelled pairs in `bench/cache_pairs.jsonl`
(`python -m bench.cache_semantic`, all-MiniLM-L6-v2 float32): 0.90, the lowest grid
threshold (0.70..0.95) with no false hit once the guard has run, which also clears the
best-scoring near-miss the guard cannot see (another intent or attribute: "return a used
item" vs "an unopened item", 0.855) by more than half a grid step. It serves about a
fifth of the paraphrases; 0.85 would serve twice as many at a 2% false-hit rate, and a
cache that answers the wrong question is worse than none. Without the guard no
threshold below 0.99 is safe: "refund order 1001" vs "refund order 1002" scores 0.965,
above most true paraphrases.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Collection
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt
import structlog

from agentkeel.activities.cache.reading import orders_action
from agentkeel.activities.cache.semantic.embedder import Embedder, aembed
from agentkeel.activities.cache.semantic.guard import GuardVerdict, guard
from agentkeel.activities.cache.semantic.index import Neighbour, SemanticIndex
from agentkeel.activities.cache.semantic.pgvector_index import PgVectorIndex

__all__ = ["DEFAULT_THRESHOLD", "Rejection", "SemanticCache", "SemanticLookup", "SemanticMatch"]

log = structlog.get_logger(__name__)

DEFAULT_THRESHOLD = 0.90
"""Least cosine similarity of a semantic hit (see the module docstring for why 0.90)."""
DEFAULT_NEIGHBOURS = 5
"""Stored questions considered per lookup: the best may fail the guard, the next pass."""
_EMBEDDINGS_KEPT = 256


@dataclass(frozen=True)
class SemanticMatch:
    """A stored question close enough to the one asked, and the key of its path."""

    path_key: str
    score: float
    matched_question: str


@dataclass(frozen=True)
class Rejection:
    """A neighbour at or above the threshold that the guard turned down."""

    path_key: str
    score: float
    matched_question: str
    reason: str
    differs: tuple[str, ...] = ()
    """What differed ("numbers", "negations", ...), without the values: safe to log."""


@dataclass(frozen=True)
class SemanticLookup:
    """Everything one lookup saw: the match, and why better-scoring neighbours lost."""

    match: SemanticMatch | None
    rejected: list[Rejection] = field(default_factory=list)
    best_score: float | None = None
    """The nearest neighbour's similarity, also when below the threshold; None: no entries."""


class SemanticCache:
    """Embedder + index + guard, per tenant.

    Args:
        embedder: Shared by every call; its `embed` runs in a worker thread.
        index: The durable index: FAISS in this process, synced from Postgres
            (`SemanticIndex`), or one pgvector table for the fleet (`PgVectorIndex`);
            `load()`-ed at start.
        threshold: Least cosine similarity of a hit (`DEFAULT_THRESHOLD`).
        neighbours: Stored questions considered per lookup.
    """

    def __init__(
        self,
        embedder: Embedder,
        index: SemanticIndex | PgVectorIndex,
        *,
        threshold: float,
        neighbours: int = DEFAULT_NEIGHBOURS,
    ) -> None:
        if embedder.dim != index.dim:
            raise ValueError(f"embedder has {embedder.dim} dimensions, the index {index.dim}")
        if embedder.identity != index.embedder:
            # Its vectors would be compared with another model's: similarities of nothing.
            raise ValueError(f"index of embedder {index.embedder!r}, not {embedder.identity!r}")
        self._embedder = embedder
        self._index = index
        self.threshold = threshold
        self.neighbours = neighbours
        # The question looked up is usually remembered right after its run: embed it once.
        self._recent: OrderedDict[str, npt.NDArray[np.float32]] = OrderedDict()
        self._embedding_now: dict[str, asyncio.Task[npt.NDArray[np.float32]]] = {}

    async def _embedding(self, question: str) -> npt.NDArray[np.float32]:
        vector = self._recent.get(question)
        if vector is not None:
            self._recent.move_to_end(question)
            return vector
        running = self._embedding_now.get(question)
        if running is not None:  # embedding ahead of `remember` (see `explain`)
            return await asyncio.shield(running)
        return await self._embed(question)

    async def _embed(self, question: str) -> npt.NDArray[np.float32]:
        vector = (await aembed(self._embedder, [question]))[0]
        self._recent[question] = vector
        if len(self._recent) > _EMBEDDINGS_KEPT:
            self._recent.popitem(last=False)
        return vector

    def _embed_ahead(self, question: str) -> None:
        """Embed `question` in the background, for its `remember` after the run: the
        lookup did not need its vector, and the run's end should not wait for it."""
        if question in self._recent or question in self._embedding_now:
            return
        if len(self._embedding_now) >= _EMBEDDINGS_KEPT:
            return  # a backlog: `remember` embeds for itself
        task = asyncio.get_running_loop().create_task(self._embed(question))
        self._embedding_now[question] = task
        task.add_done_callback(lambda _: self._embedding_now.pop(question, None))
        task.add_done_callback(_log_failure)

    async def lookup(self, tenant: str, question: str) -> SemanticMatch | None:
        """The path of a stored paraphrase of `question`, or None (see `explain`)."""
        return (await self.explain(tenant, question)).match

    async def explain(
        self, tenant: str, question: str, *, facts_first: bool = True
    ) -> SemanticLookup:
        """`lookup`, with the rejected candidates and the best score.

        A question whose literal facts (ids, numbers, amounts, ...) no stored question of
        the tenant shares cannot pass the guard: it is a miss without an embedding (one
        forward pass of the embedder saved on the run's first step, which is most
        questions that name an order or an email). `facts_first=False` embeds and searches
        all the same, to show the candidates the guard turns down."""
        if facts_first and not await self._index.may_match(tenant, question):
            self._embed_ahead(question)
            return SemanticLookup(None)
        vector = await self._embedding(question)
        neighbours = await self._index.search(tenant, vector, self.neighbours)
        result = self._choose(question, neighbours)
        if result.rejected:
            top = result.rejected[0]
            # Reasons name what differed, not the values: questions may carry emails.
            log.info(
                "semantic_candidate_rejected",
                tenant=tenant,
                score=round(top.score, 4),
                path_key=top.path_key,
                differs=top.differs,
                served=result.match is not None,
            )
        return result

    def _choose(self, question: str, neighbours: list[Neighbour]) -> SemanticLookup:
        best = neighbours[0].score if neighbours else None
        rejected: list[Rejection] = []
        acts = orders_action(question)  # once per lookup, not per neighbour
        for n in neighbours:  # best first
            if n.score < self.threshold:
                break
            verdict = guard(question, n.question)
            if verdict.ok and acts != orders_action(n.question):
                # "refund order 1003" and "can I get a refund for order 1003?" embed close.
                verdict = GuardVerdict(ok=False, reason="one orders an action", differs=("mood",))
            if verdict.ok:
                match = SemanticMatch(n.path_key, n.score, n.question)
                return SemanticLookup(match, rejected, best)
            rejected.append(
                Rejection(n.path_key, n.score, n.question, verdict.reason, verdict.differs)
            )
        return SemanticLookup(None, rejected, best)

    async def remember(self, tenant: str, question: str, path_key: str) -> None:
        """Store `question` as a way to reach `path_key` (durable; a repeat is a no-op)."""
        await self._index.add(tenant, question, path_key, await self._embedding(question))

    async def forget(self, path_keys: Collection[str]) -> int:
        """Drop the entries of invalidated paths; returns how many were dropped."""
        return await self._index.remove_path_keys(path_keys)


def _log_failure(task: asyncio.Task[npt.NDArray[np.float32]]) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.warning("semantic_embed_ahead_failed", error=repr(task.exception()))
