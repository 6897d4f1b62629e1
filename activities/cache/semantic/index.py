"""Nearest stored questions: FAISS in memory per tenant, Postgres for durability.

Why FAISS and not pgvector: the machine's Postgres 15 has no pgvector (only the embedded
pgserver ships it), and a process-local index answers without a network round trip.
Postgres (`semantic_cache_entries`, migration 0003) keeps every entry, so an index is
rebuilt after a restart (`load`) and follows the entries other workers write (`sync`,
by id, at most once a `sync_interval_s` from `search`).

The per-tenant index (`vectors.VectorIndex`) is exact up to 20k entries and HNSW beyond,
with removals as tombstones skipped at search and a rebuild once they pass a tenth.
Measured here (`python -m bench.cache_semantic`, 2 cores): a search costs 0.05 ms at 1k
entries, 1.1 ms at 10k (exact) and 0.46 ms at 100k (HNSW; 15-30 ms exact), beside 11 ms to
embed the question; top-1 recall against the exact index at 100k, for queries whose best
match clears 0.90, is 0.987; a removal costs 6 us, the rebuild at 10% tombstones 9 s, run
in a worker thread like every change to a large index.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Collection, Hashable, Iterable, Sequence
from dataclasses import dataclass, field

import asyncpg
import numpy as np
import numpy.typing as npt
import structlog

from agentkeel.activities.cache.semantic.cursor import IdCursor
from agentkeel.activities.cache.semantic.guard import facts
from agentkeel.activities.cache.semantic.tenant import THREADED_SEARCH_MIN, _mutate, _Tenant
from agentkeel.activities.cache.semantic.vectors import Neighbour, VectorIndex

__all__ = ["Neighbour", "SemanticIndex", "VectorIndex"]  # vectors re-exported for callers

log = structlog.get_logger(__name__)

SYNC_BATCH = 5_000
"""Rows per query when loading or syncing (bounds memory; 384-d rows are 1.5 KiB each)."""
SYNC_INTERVAL_S = 1.0
"""Default least time between two syncs from `search`: how stale another worker's view is."""
REMOVALS_KEPT_S = 86_400.0
"""Age at which removal rows are pruned (migration 0003 says a day)."""

# NOT EXISTS first: a repeat then takes no id from the sequence, so it leaves no gap for
# `IdCursor` to watch; ON CONFLICT covers two workers storing the same path at once.
_INSERT = """
INSERT INTO semantic_cache_entries (tenant, question, path_key, embedding, embedder)
SELECT $1::text, $2::text, $3::text, $4::bytea, $5::text
WHERE NOT EXISTS (
    SELECT 1 FROM semantic_cache_entries WHERE tenant = $1 AND embedder = $5 AND path_key = $3
)
ON CONFLICT (tenant, embedder, path_key) DO NOTHING
RETURNING id
"""
# Every id is read, other embedders' too (their vectors are not sent): the cursor then sees
# no gap where another model's entries were committed, and watches none for a late commit.
_NEW_ENTRIES = """
SELECT id, tenant, question, path_key, embedder = $4 AS ours,
       CASE WHEN embedder = $4 THEN embedding END AS embedding
FROM semantic_cache_entries
WHERE id > $1 OR id = ANY($2::bigint[]) ORDER BY id LIMIT $3
"""
_NEW_REMOVALS = """
SELECT seq, entry_id, tenant FROM semantic_cache_removals
WHERE seq > $1 OR seq = ANY($2::bigint[]) ORDER BY seq LIMIT $3
"""
_REMOVE = """
DELETE FROM semantic_cache_entries WHERE path_key = ANY($1::text[]) RETURNING id, tenant
"""
_LOG_REMOVALS = """
INSERT INTO semantic_cache_removals (entry_id, tenant)
SELECT * FROM unnest($1::bigint[], $2::text[])
"""
_PRUNE_REMOVALS = """
DELETE FROM semantic_cache_removals WHERE removed_at < now() - make_interval(secs => $1)
"""


@dataclass
class _State:
    """What `load` rebuilds and swaps in whole, so searches meanwhile use the old one."""

    tenants: dict[str, _Tenant] = field(default_factory=dict)
    entries: IdCursor = field(default_factory=IdCursor)
    removals: IdCursor = field(default_factory=IdCursor)


class SemanticIndex:
    """Every tenant's stored questions, durable in Postgres, searched in memory.

    Args:
        pool: The worker's asyncpg pool (migrations 0003 and 0009 applied).
        dim: Embedding dimension; rows of another size are skipped with a warning.
        embedder: The identity of the embedder whose vectors this index stores and
            searches (`Embedder.identity`); entries of any other are never loaded.
        sync_interval_s: Least time between two syncs triggered by `search`.
        key_of: What two questions must share to match (default: their literal facts,
            `guard.facts`), counted per tenant so that `may_match` answers without an
            embedding; None: every question may match.
    """

    def __init__(
        self,
        pool: asyncpg.Pool,
        dim: int,
        *,
        embedder: str,
        sync_interval_s: float = SYNC_INTERVAL_S,
        key_of: Callable[[str], Hashable] | None = facts,
    ) -> None:
        self._pool = pool
        self.key_of = key_of
        self.dim = dim
        self.embedder = embedder
        self.sync_interval_s = sync_interval_s
        self._state = _State()
        self._synced_at = float("-inf")  # last successful sync
        self._next_sync_at = float("-inf")  # searches do not trigger one before this
        self._sync_lock = asyncio.Lock()

    def __len__(self) -> int:
        return sum(len(t.index) for t in self._state.tenants.values())

    def _tenant(self, state: _State, tenant: str) -> _Tenant:
        if tenant not in state.tenants:
            index = VectorIndex(self.dim, key_of=self.key_of)
            state.tenants[tenant] = _Tenant(index, asyncio.Lock())
        return state.tenants[tenant]

    async def load(self) -> int:
        """Rebuild every tenant's index from Postgres; returns the number of entries."""
        async with self._sync_lock:
            state = _State()
            # Removals first: any removal committed while entries load is replayed after.
            state.removals.last = await self._pool.fetchval(
                "SELECT coalesce(max(seq), 0) FROM semantic_cache_removals"
            )
            await self._sync_into(state)
            self._state = state
        return len(self)

    async def sync(self) -> int:
        """Apply the entries and removals committed since the last sync; returns how many
        entries were added. The first sync, or one after half a day without, is a `load`:
        the removal rows it would need may have been pruned."""
        if time.monotonic() - self._synced_at > REMOVALS_KEPT_S / 2:
            return await self.load()
        async with self._sync_lock:
            return await self._sync_into(self._state)

    async def _sync_into(self, state: _State) -> int:
        added = 0
        while True:
            rows = await self._pool.fetch(
                _NEW_ENTRIES, state.entries.last, state.entries.pending(), SYNC_BATCH, self.embedder
            )
            added += await self._apply_entries(state, rows)
            state.entries.saw([r["id"] for r in rows])
            if len(rows) < SYNC_BATCH:
                break
        while True:
            rows = await self._pool.fetch(
                _NEW_REMOVALS, state.removals.last, state.removals.pending(), SYNC_BATCH
            )
            for tenant, group in _by_tenant(rows).items():
                await self._drop(state, tenant, [r["entry_id"] for r in group])
            state.removals.saw([r["seq"] for r in rows])
            if len(rows) < SYNC_BATCH:
                break
        self._synced_at = time.monotonic()
        return added

    async def _apply_entries(self, state: _State, rows: Sequence[asyncpg.Record]) -> int:
        added = 0
        for tenant, mixed in _by_tenant(rows).items():
            group = [r for r in mixed if r["ours"]]  # another model's vectors: not comparable
            good = [r for r in group if len(r["embedding"]) == 4 * self.dim]
            if len(good) < len(group):
                log.warning(
                    "semantic_entries_wrong_dim", tenant=tenant, skipped=len(group) - len(good)
                )
            if not good:
                continue
            vectors = np.frombuffer(b"".join(r["embedding"] for r in good), dtype="<f4")
            target = self._tenant(state, tenant)
            async with target.lock:
                before = len(target.index)
                await _mutate(
                    target,
                    len(good),
                    target.index.add,
                    [r["id"] for r in good],
                    vectors.reshape(len(good), self.dim),
                    [(r["question"], r["path_key"]) for r in good],
                )
                added += len(target.index) - before
        return added

    async def _drop(self, state: _State, tenant: str, ids: Sequence[int]) -> int:
        target = state.tenants.get(tenant)
        if target is None:
            return 0
        async with target.lock:
            removed: int = await _mutate(target, 0, target.index.remove, ids)
            return removed

    async def add(
        self, tenant: str, question: str, path_key: str, vector: npt.NDArray[np.float32]
    ) -> None:
        """Store an entry durably and make it searchable here at once (elsewhere at the
        other workers' next sync). Storing a `(tenant, path_key)` again is a no-op."""
        flat = np.asarray(vector, dtype="<f4").reshape(-1)
        if flat.shape[0] != self.dim:
            raise ValueError(f"vector has {flat.shape[0]} dimensions, the index {self.dim}")
        entry_id = await self._pool.fetchval(
            _INSERT, tenant, question, path_key, flat.tobytes(), self.embedder
        )
        if entry_id is None:
            return
        target = self._tenant(self._state, tenant)
        async with target.lock:
            await _mutate(
                target,
                1,
                target.index.add,
                [entry_id],
                flat.reshape(1, self.dim),
                [(question, path_key)],
            )

    async def search(
        self, tenant: str, vector: npt.NDArray[np.float32], k: int = 5
    ) -> list[Neighbour]:
        """The `k` stored questions of `tenant` nearest to `vector`, best first.

        Syncs first when the last sync is older than `sync_interval_s` and none is running;
        when Postgres fails, searches what is already in memory (with a warning). From
        `THREADED_SEARCH_MIN` entries the search runs in a thread, one at a time per tenant.
        """
        await self._sync_if_due()
        target = self._state.tenants.get(tenant)
        if target is None:
            return []
        if target.changing_in_thread:
            return []
        async with target.lock:
            if len(target.index) < THREADED_SEARCH_MIN:
                return target.index.search(vector, k)
            return await asyncio.to_thread(target.index.search, vector, k)

    async def may_match(self, tenant: str, question: str) -> bool:
        """Whether a stored question of `tenant` shares `question`'s key (its literal
        facts): the guard turns down every other, so without one no embedding is needed.
        Syncs first when due, as `search` does."""
        if self.key_of is None:
            return True
        await self._sync_if_due()
        target = self._state.tenants.get(tenant)
        return target is not None and target.index.holds_key(self.key_of(question))

    async def _sync_if_due(self) -> None:
        now = time.monotonic()
        if now >= self._next_sync_at and not self._sync_lock.locked():
            # Set before the attempt: a failing Postgres is retried after the interval,
            # not by every search.
            self._next_sync_at = now + self.sync_interval_s
            try:
                await self.sync()
            except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError) as exc:
                log.warning("semantic_sync_failed", error=str(exc))

    async def remove_path_keys(self, keys: Collection[str]) -> int:
        """Delete the entries of these path keys, here and (through the removal log) in
        every worker at its next sync; returns how many entries were deleted."""
        if not keys:
            return 0
        async with self._pool.acquire() as conn, conn.transaction():
            rows = await conn.fetch(_REMOVE, list(keys))
            if rows:
                await conn.execute(
                    _LOG_REMOVALS, [r["id"] for r in rows], [r["tenant"] for r in rows]
                )
            await conn.execute(_PRUNE_REMOVALS, REMOVALS_KEPT_S)
        for tenant, group in _by_tenant(rows).items():
            await self._drop(self._state, tenant, [r["id"] for r in group])
        return len(rows)


def _by_tenant(rows: Iterable[asyncpg.Record]) -> dict[str, list[asyncpg.Record]]:
    groups: dict[str, list[asyncpg.Record]] = {}
    for row in rows:
        groups.setdefault(row["tenant"], []).append(row)
    return groups
