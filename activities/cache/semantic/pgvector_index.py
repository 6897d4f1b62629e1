"""The semantic tier's stored questions in Postgres with pgvector: one index for the fleet.

`SemanticIndex` (FAISS) keeps a copy of every tenant's entries in each worker process and
follows the others' writes about once a second: memory, HNSW rebuilds and sync reads grow
with the number of workers. This index is the table itself, searched by Postgres through
an HNSW index (cosine), so every worker sees an entry the moment it is committed and holds
nothing in memory. Chosen by `AGENTKEEL_SEMANTIC_INDEX=pgvector`; the lookup, its guard and
its hit rules are the same (`semantic.lookup.SemanticCache`).

Per tenant: every search filters on the tenant, with pgvector's iterative index scan
(`hnsw.iterative_scan`, 0.8+) so that a small tenant beside a large one still gets its `k`
nearest rather than what is left of a global top-k. An older pgvector (the embedded
Postgres, pgserver, bundles 0.6.2) has no iterative scan: there the search is exact, a scan
of the tenant's rows without the index, right at any size, its cost growing with the
tenant's rows. The cost is a query to Postgres per lookup: at 100k entries (pgvector
0.8.1, the HNSW index) a p50 of 16.5 ms beside FAISS's 0.65 ms on a busy 2-core machine
(`python -m bench.semantic_stores`), inside the tier's 500 ms deadline, beside about 11 ms
to embed the question.

Each embedder has its own table, `semantic_vectors_<digest of its identity>` (the identity
is the table's comment): vectors of two models are never compared, and a model of another
dimension needs a column of its own size anyway. Changing the embedder starts an empty
table; the old one is left for an operator to drop. Invalidations (`remove_path_keys`)
reach only the current embedder's table: an older table's entries still point at paths
that the exact tier has dropped, so they can only miss.

The schema is made here at start (`load`), not by a migration: the `vector` extension is
only needed where this index is chosen. A Postgres without it fails the worker's start, saying so
(`PgVectorUnavailable`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Collection

import asyncpg
import numpy as np
import numpy.typing as npt

from agentkeel.activities.cache.semantic.vectors import Neighbour

HNSW_M = 16
HNSW_EF_CONSTRUCTION = 64
EF_SEARCH = 64
"""Candidates an HNSW search keeps: pgvector's default of 40 loses recall past 100k."""
ITERATIVE_SCAN_SINCE = (0, 8)
"""The pgvector release that brought `hnsw.iterative_scan`."""


def table_of(embedder: str) -> str:
    """The table of one embedder's vectors (an identifier: a digest, never the identity)."""
    return "semantic_vectors_" + hashlib.sha256(embedder.encode()).hexdigest()[:16]


def _schema(table: str, dim: int, embedder: str) -> list[str]:
    comment = embedder.replace("'", "''")
    return [
        "CREATE EXTENSION IF NOT EXISTS vector",
        f"""
        CREATE TABLE IF NOT EXISTS {table} (
            id         bigserial   PRIMARY KEY,
            tenant     text        NOT NULL,
            question   text        NOT NULL,
            path_key   text        NOT NULL,
            embedding  vector({dim}) NOT NULL,  -- L2-normalized: cosine is the inner product
            created_at timestamptz NOT NULL DEFAULT now(),
            -- path_key first: a btree led by the tenant would tempt the planner to read a
            -- tenant's every row and sort them, instead of walking the HNSW index.
            UNIQUE (path_key, tenant)
        )""",
        f"""
        CREATE INDEX IF NOT EXISTS {table}_hnsw_idx ON {table}
        USING hnsw (embedding vector_cosine_ops)
        WITH (m = {HNSW_M}, ef_construction = {HNSW_EF_CONSTRUCTION})""",
        f"COMMENT ON TABLE {table} IS 'semantic tier vectors of embedder {comment}'",
    ]


_INSERT = """
INSERT INTO {table} (tenant, question, path_key, embedding)
VALUES ($1, $2, $3, $4::vector) ON CONFLICT (path_key, tenant) DO NOTHING
"""
_SEARCH = """
SELECT question, path_key, 1 - (embedding <=> $2::vector) AS score FROM {table}
WHERE tenant = $1 ORDER BY embedding <=> $2::vector LIMIT $3
"""


def as_vector_text(vector: npt.NDArray[np.float32]) -> str:
    """pgvector's text form, `[x,y,...]` (no client-side codec needed)."""
    return "[" + ",".join(f"{x:.7g}" for x in np.asarray(vector, dtype=np.float32).ravel()) + "]"


class PgVectorUnavailable(RuntimeError):
    """The Postgres has no `vector` extension (the worker turns it into a `StartupError`)."""


class PgVectorIndex:
    """Every tenant's stored questions in one Postgres table with an HNSW index.

    Args:
        pool: The worker's asyncpg pool; its server must have the `vector` extension.
        dim: Embedding dimension (the table's column is made with it).
        embedder: The identity of the embedder whose vectors this index stores and
            searches (`Embedder.identity`): it names the table (`table_of`).
    """

    def __init__(self, pool: asyncpg.Pool, dim: int, *, embedder: str) -> None:
        self._pool = pool
        self.dim = dim
        self.embedder = embedder
        self.table = table_of(embedder)
        self._iterative: bool | None = None
        """Whether the server's pgvector has the iterative scan (read at the first search)."""

    async def _has_iterative_scan(self, conn: asyncpg.Connection) -> bool:
        if self._iterative is None:
            version: str | None = await conn.fetchval(
                "SELECT extversion FROM pg_extension WHERE extname = 'vector'"
            )
            numbers = tuple(int(p) for p in (version or "0").split(".")[:2] if p.isdigit())
            self._iterative = numbers >= ITERATIVE_SCAN_SINCE
        return self._iterative

    async def load(self) -> int:
        """Make the table and index where missing; returns how many entries are stored."""
        try:
            async with self._pool.acquire() as conn:
                for statement in _schema(self.table, self.dim, self.embedder):
                    await conn.execute(statement)
                count: int = await conn.fetchval(f"SELECT count(*) FROM {self.table}")
        except asyncpg.FeatureNotSupportedError as exc:
            raise PgVectorUnavailable(
                f"AGENTKEEL_SEMANTIC_INDEX=pgvector needs the pgvector extension in Postgres "
                f"({exc}); install it (postgresql-<version>-pgvector, or the pgvector image) "
                "or use AGENTKEEL_SEMANTIC_INDEX=faiss"
            ) from None
        except asyncpg.UndefinedFileError as exc:
            raise PgVectorUnavailable(
                f"AGENTKEEL_SEMANTIC_INDEX=pgvector: this Postgres has no pgvector ({exc})"
            ) from None
        return count

    async def add(
        self, tenant: str, question: str, path_key: str, vector: npt.NDArray[np.float32]
    ) -> None:
        """Store an entry, searchable by every worker once committed; a repeat is a no-op."""
        flat = np.asarray(vector, dtype=np.float32).reshape(-1)
        if flat.shape[0] != self.dim:
            raise ValueError(f"vector has {flat.shape[0]} dimensions, the index {self.dim}")
        await self._pool.execute(
            _INSERT.format(table=self.table), tenant, question, path_key, as_vector_text(flat)
        )

    async def may_match(self, tenant: str, question: str) -> bool:
        """Always True: this table keeps no facts to rule a question out without its
        embedding (the in-memory `SemanticIndex` does)."""
        return True

    async def search(
        self, tenant: str, vector: npt.NDArray[np.float32], k: int = 5
    ) -> list[Neighbour]:
        """The `k` stored questions of `tenant` nearest to `vector`, best first."""
        async with self._pool.acquire() as conn, conn.transaction():
            await conn.execute(f"SET LOCAL hnsw.ef_search = {max(EF_SEARCH, k)}")
            if await self._has_iterative_scan(conn):
                # A tenant's rows among many others': the scan goes on until k are found.
                await conn.execute("SET LOCAL hnsw.iterative_scan = relaxed_order")
            else:
                # No iterative scan: an index scan would filter a global top-k and could
                # leave a small tenant none of its own, so search the table exactly.
                await conn.execute("SET LOCAL enable_indexscan = off")
            rows = await conn.fetch(
                _SEARCH.format(table=self.table), tenant, as_vector_text(vector), k
            )
        found = [Neighbour(float(r["score"]), r["question"], r["path_key"]) for r in rows]
        return sorted(found, key=lambda n: -n.score)  # relaxed order: sorted here

    async def remove_path_keys(self, keys: Collection[str]) -> int:
        """Delete the entries of these path keys (for every worker at once)."""
        if not keys:
            return 0
        deleted = await self._pool.fetch(
            f"DELETE FROM {self.table} WHERE path_key = ANY($1::text[]) RETURNING id",
            list(keys),
        )
        return len(deleted)
