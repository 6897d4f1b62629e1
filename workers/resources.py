"""Long-lived clients of a CPU worker process: one pool each, built once, closed on exit."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from typing import Any

import asyncpg
import redis.asyncio as aioredis
import structlog

from agentkeel.activities.cache.path_cache import PathCache
from agentkeel.activities.cache.served_version import Publication
from agentkeel.activities.cache_lookup import CacheActivities
from agentkeel.activities.conversations import ConversationStore
from agentkeel.activities.downstream.guard import Downstreams
from agentkeel.activities.downstream.limiter import DownstreamLimiter
from agentkeel.activities.downstream.sharing import SharedReads
from agentkeel.activities.effects_ledger import EffectLedgerActivities
from agentkeel.activities.hot_questions import WarmingActivities
from agentkeel.activities.latency import LatencyActivities, LatencyBook, timed_tool
from agentkeel.activities.local_policy import LocalPolicyActivities
from agentkeel.activities.outputs import OutputActivities, OutputStore
from agentkeel.activities.overflow_slots import OverflowSlots
from agentkeel.activities.redis_errors import REDIS_ERRORS
from agentkeel.activities.run_control import RunControlActivities
from agentkeel.activities.run_store import StoreActivities
from agentkeel.activities.tools.door import EFFECT_CALLERS, door_activity
from agentkeel.activities.tools.functions import FunctionTools
from agentkeel.activities.watch_slots import WatchSlots
from agentkeel.inference.policy import Policy
from agentkeel.schemas.approvals import ApprovalPolicy
from agentkeel.schemas.tools.catalog import ACTIVITY_TOOLS
from agentkeel.sdk.domain import Domain
from agentkeel.sdk.serving import active_domain
from agentkeel.settings.connections import (
    http_client,
    postgres_pool,
    redact,
    redis_client,
)
from agentkeel.settings.domain_assembly import domain_settings, domain_tool_resources
from agentkeel.settings.mcp_assembly import serve_domain_with_mcp
from agentkeel.settings.model import (
    Settings,
    SettingsError,
    StartupError,
    speculative_calls,
)
from agentkeel.workers.cache_assembly import build_caches, tool_activities
from agentkeel.workers.claim_sweep import swept_ledger
from agentkeel.workers.policy_offers import local_policy_offers, served_here
from agentkeel.workers.stand_ins import activity_name

log = structlog.get_logger(__name__)


@asynccontextmanager
async def cpu_activities(
    settings: Settings,
    *,
    local: Policy | None = None,
    domain_environ: Mapping[str, str] | None = None,
    on_mcp_change: Callable[[str], None] | None = None,
) -> AsyncIterator[list[Callable[..., Any]]]:
    """Every activity the CPU worker serves, bound to this process's pools.

    `local`: the policy this worker serves itself (`activities.local_policy`); None: the
    one the settings make (`workers.policy_assembly.local_policy`).
    `domain_environ`: where the domain's own settings are read (default: the environment).
    `on_mcp_change`: called with an MCP server's name when its tool list changed."""
    published: list[Publication] = []

    def changed(server: str) -> None:
        for publication in published:
            publication.withdraw_soon()  # no client's fast path serves the old tools' paths
        if on_mcp_change is not None:
            on_mcp_change(server)

    async with serve_domain_with_mcp(settings, on_change=changed) as domain:
        async with _cpu_activities(
            settings, domain, local, domain_environ, published
        ) as activities:
            yield activities


@asynccontextmanager
async def _cpu_activities(
    settings: Settings,
    domain: Domain,
    local: Policy | None,
    domain_environ: Mapping[str, str] | None,
    published: list[Publication],
) -> AsyncIterator[list[Callable[..., Any]]]:
    database_url, redis_url = settings.database_url, settings.redis_url
    # The domain's settings and the policy served here are checked before opening anything.
    own_settings = domain_settings(domain, domain_environ)
    policy_here = served_here(local, settings)
    if not (database_url and redis_url):
        missing = [
            "AGENTKEEL_" + name.upper()
            for name in ("database_url", "redis_url")
            if not getattr(settings, name)
        ]
        raise SettingsError(
            f"the CPU worker needs {', '.join(missing)} (or run it through `agentkeel up`)"
        )
    try:
        pool = await postgres_pool(database_url, max_size=settings.db_pool_max)
    except (OSError, asyncpg.PostgresError) as exc:
        raise StartupError(f"Postgres at {redact(database_url)}: {exc}") from None
    redis = redis_client(redis_url)
    try:
        await redis.ping()
    except REDIS_ERRORS as exc:
        # Redis only accelerates; the worker serves runs without it (every lookup misses).
        log.warning("redis_unavailable_at_start", url=redact(redis_url), error=str(exc))
    http = http_client()
    stack = AsyncExitStack()
    run_control = RunControlActivities(approval_policy(settings), redis)
    caches = None
    try:
        caches = await build_caches(settings, redis, pool)
        # Clients' fast paths answer only while this is the version the workers serve.
        publication = Publication(
            redis, settings.task_queue, caches.paths.version, settings.temporal_namespace
        )
        await publication.publish()
        published.append(publication)
        stack.push_async_callback(_cancelled, asyncio.create_task(publication.keep_published()))
        resources = await stack.enter_async_context(
            domain_tool_resources(domain, pool=pool, http=http, settings=own_settings)
        )
        tools = FunctionTools(ACTIVITY_TOOLS, resources, domain.is_scoped)
        # What each tool took, as runs saw it: what a run with a deadline plans from.
        latencies = LatencyBook(redis)
        offers = await local_policy_offers(policy_here, pool, redis, settings, stack)
        internal: list[Callable[..., Any]] = [
            LatencyActivities(latencies).latency_estimates,
            _lookup(caches.paths, settings, offers),
            StoreActivities(pool, caches.paths, redis).store,
            WarmingActivities(pool, caches.paths).hot_questions,
            *run_control.all_activities(),
            *_run_state_activities(pool, redis, settings),
            *offers.all(),
        ]
        yield [
            *(
                timed_tool(method, activity_name(method), latencies)
                for method in tool_activities(tools, caches, downstreams(settings, redis))
            ),
            # Every other activity is agentkeel's own too: one door for all of them.
            *(door_activity(method) for method in internal),
            *(
                door_activity(method, EFFECT_CALLERS)
                for method in EffectLedgerActivities(swept_ledger(pool, settings, stack)).all()
            ),
        ]
    finally:
        await stack.aclose()
        if caches is not None:
            await caches.tool_results.close()
        await http.aclose()
        for publication in published:
            await publication.settle()
        await redis.aclose()
        await pool.close()


async def _cancelled(task: asyncio.Task[None]) -> None:
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)


def downstreams(settings: Settings, redis: aioredis.Redis) -> Downstreams:
    """The protections of the services behind the tools, as settings ask (checked here, at
    start: a `AGENTKEEL_DOWNSTREAM_<NAME>_*` of a service not in the catalog stops the
    worker with its name)."""
    return Downstreams(
        limiter=DownstreamLimiter(
            redis,
            settings.downstream_limits({d.name: d for d in active_domain().downstreams}),
            namespace=settings.temporal_namespace,
            tenant_share=settings.tenant_downstream_share,
        ),
        shared=SharedReads() if settings.share_reads == "on" else None,
        merge_window_s=settings.merge_window_ms / 1000,
    )


def _lookup(
    paths: PathCache, settings: Settings, offers: LocalPolicyActivities
) -> Callable[..., Any]:
    """The cache lookup, which also says where this worker serves the policy steps."""
    lookup = CacheActivities(paths, speculate_calls=speculative_calls(settings), offers=offers)
    return lookup.lookup_cache


def _run_state_activities(
    pool: asyncpg.Pool, redis: aioredis.Redis, settings: Settings
) -> list[Callable[..., Any]]:
    """A run's own state beside its tools: its watch or overflow slot, its large outputs."""
    outputs = OutputActivities(OutputStore(pool))
    return [
        *WatchSlots(redis, settings.task_queue).all(),
        *OverflowSlots(redis, settings.task_queue, settings.overflow_runs_in_flight).all(),
        *(outputs.store_output, outputs.combine_outputs, outputs.load_outputs),
    ]


def approval_policy(settings: Settings) -> ApprovalPolicy:
    """The thresholds every run of this worker reads (once, recorded in its history)."""
    return ApprovalPolicy(
        threshold_cents=settings.approval_threshold_cents,
        self_service_cents=settings.self_service_cents,
        timeout_s=settings.approval_timeout_s,
    )


@dataclass(frozen=True)
class InferenceResources:
    redis: aioredis.Redis | None
    conversations: ConversationStore | None
    outputs: OutputStore | None


@asynccontextmanager
async def inference_resources(
    settings: Settings,
) -> AsyncIterator[InferenceResources]:
    """The inference worker's clients: Redis for token streams, Postgres for conversations
    and for large step outputs that reach the respond step by reference.

    Both optional: without Redis answers are not streamed, without Postgres prompts have
    no conversation history (and outputs by reference stay references); the worker serves
    either way.
    """
    redis = redis_client(settings.redis_url) if settings.redis_url else None
    pool = None
    if settings.database_url:
        try:
            pool = await postgres_pool(settings.database_url, max_size=4)
        except (OSError, asyncpg.PostgresError) as exc:
            raise StartupError(f"Postgres at {redact(settings.database_url)}: {exc}") from None
    try:
        yield InferenceResources(
            redis=redis,
            conversations=ConversationStore(pool) if pool is not None else None,
            outputs=OutputStore(pool) if pool is not None else None,
        )
    finally:
        if pool is not None:
            await pool.close()
        if redis is not None:
            await redis.aclose()
