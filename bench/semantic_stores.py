"""The semantic tier's two stores side by side: lookup p50 at 100k entries.

    python -m bench.semantic_stores [--entries N] [--queries N]

FAISS (`SemanticIndex`'s per-tenant `VectorIndex`, HNSW past 20k, in this process) beside
pgvector (`PgVectorIndex`: one table, HNSW, a round trip to Postgres per lookup), both
holding the same N entries of one tenant (embedded questions and noisy copies, as
`bench.cache_semantic_latency` makes them), both asked the same queries. Printed: each store's
search p50/p99 and pgvector's p50 as a ratio of FAISS's, measured in this run. Needs a
Postgres with the `vector` extension at AGENTKEEL_BENCH_ADMIN_DSN (a database is made and
dropped); without one only FAISS is measured, and that is said.
"""

from __future__ import annotations

import argparse
import asyncio
import io
import os
import time
import uuid

import asyncpg
import numpy as np

from agentkeel.activities.cache.semantic.embedder import MiniLmEmbedder
from agentkeel.activities.cache.semantic.pgvector_index import (
    PgVectorIndex,
    _schema,
    as_vector_text,
)
from agentkeel.activities.cache.semantic.vectors import VectorIndex
from bench.cache_semantic_latency import Vectors, p50_p99, pct, synthetic_vectors

TENANT = "bench"


async def faiss_ms(vectors: Vectors, queries: Vectors) -> list[float]:
    index = VectorIndex(vectors.shape[1])
    index.add(range(len(vectors)), vectors, [("q", f"k{i}") for i in range(len(vectors))])
    out = []
    for q in queries:
        start = time.perf_counter()
        await asyncio.to_thread(index.search, q, 5)  # as `SemanticIndex.search` runs it
        out.append((time.perf_counter() - start) * 1000)
    return out


async def pgvector_ms(admin_dsn: str, vectors: Vectors, queries: Vectors) -> list[float] | str:
    name = f"agentkeel_bench_vectors_{uuid.uuid4().hex[:8]}"
    admin = await asyncpg.connect(admin_dsn)
    try:
        available = await admin.fetchval(
            "SELECT count(*) FROM pg_available_extensions WHERE name = 'vector'"
        )
        if not available:
            return "this Postgres has no pgvector extension"
        await admin.execute(f'CREATE DATABASE "{name}"')
    finally:
        await admin.close()
    dsn = admin_dsn.rsplit("/", 1)[0] + f"/{name}"
    pool = await asyncpg.create_pool(dsn, min_size=1, max_size=2)
    try:
        index = PgVectorIndex(pool, vectors.shape[1], embedder="bench-vectors")
        await index.load()
        started = time.perf_counter()
        await pool.execute(f"DROP INDEX {index.table}_hnsw_idx")  # built once, after COPY
        rows = io.BytesIO(
            "".join(f"{TENANT}\tq{i}\tk{i}\t{as_vector_text(v)}\n" for i, v in enumerate(vectors))
            .encode()
        )  # fmt: skip
        async with pool.acquire() as conn:
            await conn.copy_to_table(
                index.table,
                source=rows,
                columns=["tenant", "question", "path_key", "embedding"],
            )
            await conn.execute("SET maintenance_work_mem = '1GB'")
            await conn.execute(_schema(index.table, vectors.shape[1], index.embedder)[-2])
        built_s = time.perf_counter() - started
        print(f"pgvector: {len(vectors)} rows loaded, HNSW built ({built_s:.0f} s)")
        for q in queries[:10]:
            await index.search(TENANT, q, 5)  # warm the pool and the index pages
        plan = await pool.fetchval(
            f"EXPLAIN (FORMAT TEXT) SELECT path_key FROM {index.table} WHERE tenant = $1 "
            "ORDER BY embedding <=> $2::vector LIMIT 5",
            TENANT,
            as_vector_text(queries[0]),
        )
        print(f"pgvector plan: {plan}")
        out = []
        for q in queries:
            start = time.perf_counter()
            await index.search(TENANT, q, 5)
            out.append((time.perf_counter() - start) * 1000)
        print(f"pgvector: {len(out)} searches timed", flush=True)
        return out
    finally:
        await pool.close()
        admin = await asyncpg.connect(admin_dsn)
        try:
            await admin.execute(f'DROP DATABASE IF EXISTS "{name}"')
        finally:
            await admin.close()


async def run(args: argparse.Namespace) -> None:
    embedder = MiniLmEmbedder(batch_size=128)
    vectors = synthetic_vectors(embedder, args.entries, min(args.real, args.entries))
    rng = np.random.default_rng(11)
    queries = vectors[rng.integers(0, len(vectors), args.queries)].copy()
    queries += rng.normal(0, 0.02, queries.shape).astype(np.float32)
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)
    faiss = await faiss_ms(vectors, queries)
    print(f"faiss: {p50_p99(faiss)}", flush=True)
    dsn = os.environ.get(
        "AGENTKEEL_BENCH_ADMIN_DSN", "postgresql://postgres@127.0.0.1:5432/postgres"
    )
    pg = await pgvector_ms(dsn, vectors, queries)
    print(f"\nsemantic lookup at {args.entries} entries of one tenant, {args.queries} queries:")
    print(f"  faiss (in process)    {p50_p99(faiss)}")
    if isinstance(pg, str):
        print(f"  pgvector              not measured: {pg}")
        return
    ratio = pct(pg, 0.5) / pct(faiss, 0.5)
    print(f"  pgvector (Postgres)   {p50_p99(pg)}   p50 x{ratio:.1f} of faiss")


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.semantic_stores", description=__doc__)
    parser.add_argument("--entries", type=int, default=100_000)
    parser.add_argument("--real", type=int, default=2_000, help="entries embedded for real")
    parser.add_argument("--queries", type=int, default=200)
    asyncio.run(run(parser.parse_args()))


if __name__ == "__main__":
    main()
