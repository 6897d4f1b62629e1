"""Part (a) of `bench.cache_semantic`: what a semantic lookup costs as the index grows.

Embedding one question and searching 1k, 10k and 100k entries, beside the exact tier
(sha256 key + Redis GET) measured in the same run; then the approximate index's top-1
recall against the exact one at 100k, and what a removal costs. Kept apart from the
labelled pairs' correctness (parts (b) to (d)) because it needs no labels, only vectors,
and `bench.semantic_stores` builds its entries the same way.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import os
import random
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from agentkeel.activities.cache.semantic.embedder import (
    SentenceTransformerEmbedder as MiniLmEmbedder,
)
from agentkeel.activities.cache.semantic.index import THREADED_SEARCH_MIN, VectorIndex
from agentkeel.schemas.cache_lookup import normalize_question

SIZES = (1_000, 10_000, 100_000)
Vectors = npt.NDArray[np.float32]

_POLICY = (
    "what is your return policy", "how do refunds work", "how long does shipping take",
    "do you ship internationally", "what does the warranty cover", "can I exchange an item",
    "how do I cancel my order", "which payment methods do you accept", "is shipping free",
    "who pays for return shipping", "how long do card refunds take", "do gift cards expire",
)  # fmt: skip
_TEMPLATES: tuple[Callable[[random.Random], str], ...] = (
    lambda r: f"where is order {r.randint(1001, 6000)}",
    lambda r: f"what is the status of order #{r.randint(1001, 6000)}",
    lambda r: (
        f"refund ${r.randint(1, 300)}.{r.randint(0, 99):02d} for order {r.randint(1001, 6000)}"
    ),
    lambda r: f"cancel order {r.randint(1001, 6000)} please",
    lambda r: f"has order {r.randint(1001, 6000)} shipped yet",
    lambda r: f"is SKU-{r.randint(1, 400):05d} in stock",
    lambda r: f"how much does SKU-{r.randint(1, 400):05d} cost",
    lambda r: f"which warehouses have SKU-{r.randint(1, 400):05d}",
    lambda r: f"track my package TRK{r.randint(1001, 6000):010d}",
    lambda r: f"show the orders of customer{r.randint(1, 900)}@example.com",
    lambda r: f"{r.choice(_POLICY)} for order {r.randint(1001, 6000)}",
    lambda r: f"{r.choice(_POLICY)}{r.choice(('', '?', ' for electronics', ' for books'))}",
)


def pct(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def p50_p99(ms: Sequence[float]) -> str:
    return f"p50 {pct(ms, 0.5):7.3f} ms  p99 {pct(ms, 0.99):7.3f} ms"


def timed(fn: Callable[[], Any], repeats: int) -> list[float]:
    out = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        out.append((time.perf_counter() - start) * 1000)
    return out


def synthetic_vectors(embedder: MiniLmEmbedder, total: int, real: int, seed: int = 7) -> Vectors:
    rng = random.Random(seed)
    texts = [rng.choice(_TEMPLATES)(rng) for _ in range(real)]
    base = embedder.embed(texts)
    if total <= real:
        return base[:total]
    noise_rng = np.random.default_rng(seed)
    copies = base[noise_rng.integers(0, real, total - real)]
    # Noise of 0.01 per dimension keeps a copy ~0.98 similar to its original.
    copies = copies + noise_rng.normal(0, 0.01, copies.shape).astype(np.float32)
    copies /= np.linalg.norm(copies, axis=1, keepdims=True)
    return np.vstack([base, copies]).astype(np.float32)


def exact_key(question: str) -> str:
    """What the exact tier computes per lookup: a sha256 of the normalized question."""
    digest = hashlib.sha256(normalize_question(question).encode()).hexdigest()[:32]
    return f"agentkeel:bench:semantic:{digest}"


async def exact_tier_ms(url: str, questions: Sequence[str]) -> list[float] | str:
    import redis.asyncio as aioredis
    from redis.exceptions import RedisError

    client = aioredis.from_url(url, socket_connect_timeout=1, socket_timeout=1)
    try:
        key = exact_key(questions[0])
        await client.set(key, b"x" * 2048, px=60_000)
        out = []
        for i in range(max(300, len(questions))):
            start = time.perf_counter()
            await client.get(exact_key(questions[i % len(questions)]))
            out.append((time.perf_counter() - start) * 1000)
        await client.delete(key)
        return out
    except (RedisError, OSError) as exc:
        return f"Redis at {url} unavailable: {exc}"
    finally:
        await client.aclose()


async def latency(embedder: MiniLmEmbedder, questions: list[str], args: argparse.Namespace) -> None:
    print("\n== (a) lookup latency ==")
    url = os.environ.get("AGENTKEEL_REDIS_URL", "redis://127.0.0.1:6379/0")
    exact = await exact_tier_ms(url, questions)
    queries = [questions[i % len(questions)] for i in range(args.queries)]
    for q in queries[:10]:
        embedder.embed([q])  # warm-up
    embed_ms = []
    for q in queries:
        start = time.perf_counter()
        embedder.embed([q])
        embed_ms.append((time.perf_counter() - start) * 1000)
    qvecs = embedder.embed(queries)
    hash_ms = timed(lambda: exact_key(questions[0]), 1000)
    if isinstance(exact, str):
        print(f"exact tier: {exact}")
        baseline, base_name = pct(embed_ms, 0.5), "embedding"
    else:
        print(f"exact tier (sha256 key + Redis GET)   {p50_p99(exact)}")
        baseline, base_name = pct(exact, 0.5), "exact tier"
    print(f"  sha256 key alone                     {p50_p99(hash_ms)}")
    print(f"embedding (MiniLM-L6, 1 question)     {p50_p99(embed_ms)}")
    start = time.perf_counter()
    vectors = synthetic_vectors(embedder, max(SIZES), args.real)
    print(f"entries: {args.real} embedded + {max(SIZES) - args.real} noisy copies "
          f"({time.perf_counter() - start:.1f} s)")  # fmt: skip
    print(f"{'entries':>8}  {'search':<34}  {'embed + search':<34}  p50 vs {base_name}")
    for size in SIZES:
        index = VectorIndex(embedder.dim)
        index.add(range(size), vectors[:size], [("q", f"k{i}") for i in range(size)])
        search_ms = []
        for v in qvecs:
            start = time.perf_counter()
            if size >= THREADED_SEARCH_MIN:
                await asyncio.to_thread(index.search, v, 5)
            else:
                index.search(v, 5)
            search_ms.append((time.perf_counter() - start) * 1000)
        total = [e + s for e, s in zip(embed_ms, search_ms, strict=True)]
        ratio = pct(total, 0.5) / baseline
        print(f"{size:>8}  {p50_p99(search_ms):<34}  {p50_p99(total):<34}  x{ratio:,.0f}")
    if not args.no_recall:
        recall(vectors, qvecs, args.threshold)


def recall(vectors: Vectors, qvecs: Vectors, threshold: float) -> None:
    """The approximate index against the exact one at the largest size: top-1 agreement on
    queries whose exact best match clears the threshold (the only ones a hit can come
    from), and what a removal costs there (tombstone, then rebuild at a tenth)."""
    size = len(vectors)
    start = time.perf_counter()
    approximate = VectorIndex(vectors.shape[1])
    approximate.add(range(size), vectors, [("q", f"k{i}") for i in range(size)])
    build_s = time.perf_counter() - start
    exact = VectorIndex(vectors.shape[1], hnsw_from=size + 1)
    exact.add(range(size), vectors, [("q", f"k{i}") for i in range(size)])
    # Queries near stored entries, as paraphrases are: stored vectors with a little noise.
    rng = np.random.default_rng(3)
    near = vectors[rng.integers(0, size, len(qvecs))]
    near = near + rng.normal(0, 0.01, near.shape).astype(np.float32)
    near /= np.linalg.norm(near, axis=1, keepdims=True)
    agree = close = 0
    for query in [*qvecs, *near]:
        best = exact.search(query, 1)[0]
        if best.score < threshold:
            continue
        close += 1
        found = approximate.search(query, 1)[0]
        # Noisy copies make near-ties: a match as good as the exact one counts.
        agree += found.path_key == best.path_key or found.score >= best.score - 1e-6
    remove_ms = timed(lambda: approximate.remove([int(rng.integers(0, size))]), 50)
    start = time.perf_counter()
    approximate.remove(range(size // 10 + 1))
    rebuild_s = time.perf_counter() - start
    print(f"index at {size}: HNSW (M=32) built in {build_s:.1f} s; top-1 recall against "
          f"exact for {close} queries above {threshold}: {agree / max(close, 1):.3f}; "
          f"a removal {p50_p99(remove_ms)} (tombstone), the rebuild at 10% tombstones "
          f"{rebuild_s:.1f} s")  # fmt: skip
