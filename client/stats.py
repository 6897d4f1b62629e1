"""`agentkeel stats`: where the time goes in a live system, from the run records.

Per layer P50 / P95 / P99 and its share of the total, the cache's hit ratio by tier, the
heavy model's share of routes and its override rate, and the slowest runs by workflow id:
the seeds' "measure every layer, then cut where the time goes" table, for what ran.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from datetime import timedelta
from typing import Any

import asyncpg
import redis.asyncio as aioredis

from agentkeel.client.fast_hits import fast_hits
from agentkeel.client.served_version import REDIS_ERRORS
from agentkeel.schemas.queues import TASK_QUEUE

LAYERS = ("cache", "route", "plan", "tools", "respond")
"""The layers that add up to a run's total; what is left is orchestration."""
SLOWEST = 5


@dataclass
class LayerStats:
    layer: str
    p50_ms: float
    p95_ms: float
    p99_ms: float
    share: float
    """Of the summed total time of the runs (layers, orchestration and `total` itself: 1)."""


@dataclass
class SlowRun:
    workflow_id: str
    total_ms: float
    question: str


@dataclass
class RunStats:
    since_s: float
    tenant: str | None
    runs: int
    layers: list[LayerStats] = field(default_factory=list)
    ttft: LayerStats | None = None
    cache: dict[str, int] = field(default_factory=dict)
    """Runs by cache status (miss, exact, semantic, plan, bypass), and `fast_path`: exact
    hits the client answered from Redis with no run (`client.fast_hits`; counted where
    `stats` is given the Redis)."""
    heavy_share: float = 0.0
    """Of the routed runs (not answered from the cache), those the heavy model planned."""
    override_rate: float = 0.0
    """Of the heavy tier's runs, those whose intent it changed."""
    slowest: list[SlowRun] = field(default_factory=list)

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2)


_LAYER_SQL = """
SELECT percentile_cont(ARRAY[0.5, 0.95, 0.99])
         WITHIN GROUP (ORDER BY (timings->>$3)::float)
         FILTER (WHERE (timings->>$3)::float > 0 OR $3 = 'total') AS p,
       coalesce(sum((timings->>$3)::float), 0) AS total,
       count(*) FILTER (WHERE (timings->>$3)::float > 0) AS runs
FROM agent_runs
WHERE created_at >= now() - make_interval(secs => $1) AND ($2::text IS NULL OR tenant = $2)
"""
"""Percentiles over the runs that went through the layer (a cache hit skips routing: its
zero is not a fast route), as the layer histogram of the metrics records them."""
_WHERE = "created_at >= now() - make_interval(secs => $1) AND ($2::text IS NULL OR tenant = $2)"


async def run_stats(
    database_url: str,
    *,
    since: timedelta,
    tenant: str | None,
    redis: aioredis.Redis | None = None,
    namespace: str = "default",
    task_queue: str = TASK_QUEUE,
) -> RunStats:
    """The figures of the runs recorded in `since`; with `redis`, the client fast path's
    hits too (of `namespace` and `task_queue`'s deployment)."""
    conn = await asyncpg.connect(database_url, timeout=10)
    try:
        stats = await _stats(conn, since.total_seconds(), tenant)
    finally:
        await conn.close()
    if redis is not None:
        try:
            hits = await fast_hits(
                redis,
                namespace=namespace,
                task_queue=task_queue,
                since_s=since.total_seconds(),
                tenant=tenant,
            )
        except REDIS_ERRORS:
            hits = 0  # the run records alone, as before there was a count
        if hits:
            stats.cache["fast_path"] = hits
    return stats


async def _stats(conn: Any, since_s: float, tenant: str | None) -> RunStats:
    runs = await conn.fetchval(f"SELECT count(*) FROM agent_runs WHERE {_WHERE}", since_s, tenant)
    stats = RunStats(since_s=since_s, tenant=tenant, runs=runs)
    if not runs:
        return stats
    await _figures(conn, stats)
    return stats


async def _figures(conn: Any, stats: RunStats) -> None:
    since_s, tenant = stats.since_s, stats.tenant
    measured = {}
    for layer in (*LAYERS, "total", "ttft"):
        row = await conn.fetchrow(_LAYER_SQL, since_s, tenant, layer)
        measured[layer] = (row["p"] or [0.0, 0.0, 0.0], row["total"])
    grand_total = measured["total"][1] or 1.0
    layered = 0.0
    for layer in (*LAYERS, "total"):
        (p50, p95, p99), summed = measured[layer]
        stats.layers.append(LayerStats(layer, p50, p95, p99, summed / grand_total))
        layered += summed if layer != "total" else 0.0
    orchestration = max(grand_total - layered, 0.0) / grand_total
    stats.layers.insert(len(LAYERS), LayerStats("orchestration", 0.0, 0.0, 0.0, orchestration))
    (p50, p95, p99), _ = measured["ttft"]
    stats.ttft = LayerStats("ttft", p50, p95, p99, 0.0)
    rows = await conn.fetch(
        f"SELECT cache_status, count(*) AS n FROM agent_runs WHERE {_WHERE} GROUP BY 1",
        since_s,
        tenant,
    )
    stats.cache = {r["cache_status"] or "unknown": r["n"] for r in rows}
    routed = await conn.fetchrow(
        "SELECT count(*) FILTER (WHERE tier = 'heavy') AS heavy, "
        "count(*) FILTER (WHERE tier <> 'cache') AS routed, "
        "count(*) FILTER (WHERE tier = 'heavy' AND overridden_intent IS NOT NULL) AS overridden "
        f"FROM agent_runs WHERE {_WHERE}",
        since_s,
        tenant,
    )
    stats.heavy_share = routed["heavy"] / routed["routed"] if routed["routed"] else 0.0
    stats.override_rate = routed["overridden"] / routed["heavy"] if routed["heavy"] else 0.0
    slow = await conn.fetch(
        "SELECT workflow_id, (timings->>'total')::float AS total, question FROM agent_runs "
        f"WHERE {_WHERE} ORDER BY (timings->>'total')::float DESC NULLS LAST LIMIT {SLOWEST}",
        since_s,
        tenant,
    )
    stats.slowest = [
        SlowRun(r["workflow_id"], r["total"] or 0.0, r["question"] or "") for r in slow
    ]


def format_stats(stats: RunStats) -> str:
    scope = f"tenant {stats.tenant}" if stats.tenant else "all tenants"
    since = _human(stats.since_s)
    fast = stats.cache.get("fast_path", 0)
    answered = f"; {fast} answered by the client fast path, with no run" if fast else ""
    if not stats.runs:
        return f"no runs recorded in the last {since} ({scope}){answered}"
    lines = [f"{stats.runs} runs in the last {since} ({scope}){answered}", ""]
    lines.append(f"  {'layer':<14}{'p50 ms':>9}{'p95 ms':>9}{'p99 ms':>9}{'share':>8}")
    for row in stats.layers:
        if row.layer == "orchestration":
            lines.append(f"  {'orchestration':<14}{'':>9}{'':>9}{'':>9}{row.share:>8.0%}")
            continue
        lines.append(
            f"  {row.layer:<14}{row.p50_ms:>9.1f}{row.p95_ms:>9.1f}{row.p99_ms:>9.1f}"
            f"{row.share:>8.0%}"
        )
    if stats.ttft is not None:
        t = stats.ttft
        lines.append(f"  {'first token':<14}{t.p50_ms:>9.1f}{t.p95_ms:>9.1f}{t.p99_ms:>9.1f}")
    lines.append("")
    tiers = ("exact", "canonical", "semantic", "plan", "fast_path")
    hits = {k: v for k, v in stats.cache.items() if k in tiers}
    looked = sum(v for k, v in stats.cache.items() if k != "bypass")
    ratio = sum(hits.values()) / looked if looked else 0.0
    by_tier = ", ".join(
        f"{k.replace('_', ' ')} {v / looked:.0%}" for k, v in sorted(hits.items()) if looked
    )
    lines.append(f"  cache hit ratio {ratio:.0%}" + (f" ({by_tier})" if by_tier else ""))
    lines.append(
        f"  heavy model: {stats.heavy_share:.0%} of routed runs; "
        f"overrode the router's intent in {stats.override_rate:.0%} of them"
    )
    lines.append("")
    lines.append("  slowest runs:")
    for run in stats.slowest:
        question = run.question if len(run.question) <= 60 else run.question[:59] + "…"
        lines.append(f"    {run.total_ms:>9.1f} ms  {run.workflow_id}  {question}")
    return "\n".join(lines)


def _human(seconds: float) -> str:
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size and seconds % size == 0:
            return f"{seconds / size:.0f}{unit}"
    return f"{seconds:.0f}s"
