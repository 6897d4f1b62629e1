"""The benchmark's Temporal stack: a dev server, a throwaway database, in-process workers.

Everything is entered on one `AsyncExitStack`, so it is torn down in reverse order
whether the benchmark finishes, fails or is interrupted with Ctrl-C.
"""

from __future__ import annotations

import inspect
import os
import tempfile
import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import asyncpg
from temporalio.client import Client
from temporalio.testing import WorkflowEnvironment

from agentkeel.activities.database.migrate import apply_migrations
from agentkeel.activities.local_policy import LocalPolicyActivities
from agentkeel.activities.model_calls import InferenceActivities
from agentkeel.activities.plan_ahead import UnsureForecast
from agentkeel.cli.stack.databases import throwaway_database
from agentkeel.cli.stack.fleet import WorkerFleet
from agentkeel.cli.stack.procs import find_temporal_binary
from agentkeel.cli.stack.temporal import queue_poll_flags
from agentkeel.examples.shop import domain as shop
from agentkeel.examples.shop.rules.policy import RulesPolicy
from agentkeel.examples.shop.seed import seed_demo_data
from agentkeel.inference.policy import Policy
from agentkeel.settings.connections import redis_client
from agentkeel.settings.model import ENV_PREFIX, Settings
from agentkeel.settings.namespace_setup import ensure_search_attributes
from agentkeel.settings.tracing import tracing_plugins
from agentkeel.workers.policy_offers import unsure_forecast
from agentkeel.workers.resources import cpu_activities
from agentkeel.workers.slots import cpu_slots
from agentkeel.workers.stand_ins import with_stand_ins
from agentkeel.workers.temporal_client import agentkeel_plugins
from agentkeel.workers.worker import cpu_worker, inference_worker
from bench.react import BenchReactWorkflow

DEFAULT_ADMIN_DSN = "postgresql://postgres@127.0.0.1:5432/postgres"
DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/0"
CARRIER_PLACEHOLDER = "http://127.0.0.1:9"
"""Never called: `track_shipment` is a stand-in, but the CPU worker requires a URL."""
INFERENCE_CONCURRENCY = 8


@dataclass(frozen=True)
class StackConfig:
    """Where the benchmark finds its services; read once in main()."""

    admin_dsn: str
    """Server on which a throwaway database is created when `database_url` is unset."""
    redis_url: str
    database_url: str | None = None
    """An existing database to use (migrated, never dropped); None: a throwaway one."""

    @classmethod
    def from_env(cls) -> StackConfig:
        return cls(
            admin_dsn=os.environ.get("AGENTKEEL_BENCH_ADMIN_DSN") or DEFAULT_ADMIN_DSN,
            redis_url=os.environ.get("AGENTKEEL_REDIS_URL") or DEFAULT_REDIS_URL,
            database_url=os.environ.get("AGENTKEEL_DATABASE_URL") or None,
        )


@dataclass(frozen=True)
class BenchStack:
    client: Client
    task_queue: str
    settings: Settings
    forecast: UnsureForecast
    """The inference worker's: a benchmark may switch planning ahead on and off."""
    local_offers: LocalPolicyActivities
    """The CPU worker's: a benchmark may switch local tool reads on and off
    (`tools_here`; a run reads it at its first policy step)."""


async def _migrate(dsn: str) -> None:
    conn = await asyncpg.connect(dsn)
    try:
        await apply_migrations(conn, shop)
    finally:
        await conn.close()


@asynccontextmanager
async def bench_stack(
    config: StackConfig,
    *,
    policy: Policy,
    stand_ins: list[Callable[..., Any]],
    seed_orders: int | None = None,
    dev_server_args: list[str] | None = None,
    policy_on_cpu_worker: bool = False,
    token_streams: bool = False,
    inference_process: bool = False,
    **settings_overrides: Any,
) -> AsyncIterator[BenchStack]:
    """A dev server and workers on a fresh task queue, with `stand_ins` replacing real tools
    (and `settings_overrides` on top of the defaults). `token_streams`: the inference worker
    publishes answers to Redis as they are written, as in production. `inference_process`:
    the inference worker is `agentkeel worker inference`, a process of its own as deployed
    (its policy built from the settings; `policy` then serves no step)."""
    async with AsyncExitStack() as stack:
        database_url = await _database(stack, config, seed_orders)
        env = await _dev_server(stack, dev_server_args)
        if type(policy) is not RulesPolicy and not policy_on_cpu_worker:
            # The bench's policy is the inference worker's: the CPU worker must not answer
            # policy steps itself with the rules.
            settings_overrides.setdefault("local_policy", "off")
        carrier = settings_overrides.pop("carrier_url", None) or CARRIER_PLACEHOLDER
        settings = Settings(
            **{
                "database_url": database_url,
                "redis_url": config.redis_url,
                "task_queue": f"bench-{uuid.uuid4().hex[:12]}",
                # What the workers' own clients dial (the ledger's claim sweep): this server.
                "temporal_address": env.client.service_client.config.target_host,
                **settings_overrides,
            }
        )
        local = policy if policy_on_cpu_worker else None
        activities = await stack.enter_async_context(
            cpu_activities(
                settings, local=local, domain_environ={"AGENTKEEL_SHOP_CARRIER_URL": carrier}
            )
        )
        activities = with_stand_ins(activities, stand_ins)
        forecast = unsure_forecast(settings)
        streams = None
        if token_streams:
            streams = redis_client(config.redis_url)
            stack.push_async_callback(streams.aclose)
        workers = [_cpu_worker(env.client, settings, activities)]
        if inference_process:
            await stack.enter_async_context(inference_child(env.client, settings))
        else:
            workers.append(
                inference_worker(
                    env.client,
                    settings.inference_task_queue,
                    InferenceActivities(
                        policy,
                        redis=streams,
                        forecast=forecast,
                        stream_plans=settings.plan_stream == "on",
                    ),
                    max_concurrent=INFERENCE_CONCURRENCY,
                )
            )
        for worker in workers:
            await stack.enter_async_context(worker)
        yield BenchStack(
            client=env.client,
            task_queue=settings.task_queue,
            settings=settings,
            forecast=forecast,
            local_offers=_local_offers(activities),
        )


async def _database(stack: AsyncExitStack, config: StackConfig, seed_orders: int | None) -> str:
    """The database's URL: a throwaway one (seeded with `seed_orders` demo orders, if given),
    dropped when `stack` closes, or the configured one, migrated and kept."""
    if config.database_url is not None:
        await _migrate(config.database_url)
        return config.database_url
    database_url: str = await stack.enter_async_context(
        throwaway_database(
            config.admin_dsn,
            prefix="agentkeel_bench",
            domain=shop,
            seed=None if seed_orders is None else partial(seed_demo_data, orders=seed_orders),
        )
    )
    return database_url


async def _dev_server(
    stack: AsyncExitStack, dev_server_args: list[str] | None
) -> WorkflowEnvironment:
    """A Temporal dev server, shut down when `stack` closes, with agentkeel's search
    attributes registered."""
    env = await WorkflowEnvironment.start_local(
        dev_server_existing_path=find_temporal_binary(),
        plugins=[*agentkeel_plugins(), *tracing_plugins()],
        dev_server_log_level="error",  # its start-up warnings would split the table
        dev_server_extra_args=queue_poll_flags() if dev_server_args is None else dev_server_args,
    )
    stack.push_async_callback(env.shutdown)
    # AgentWorkflow upserts them; unknown to the server, its workflow tasks would fail.
    await ensure_search_attributes(env.client, env.client.namespace)
    return env


def _local_offers(activities: list[Callable[..., Any]]) -> LocalPolicyActivities:
    for fn in activities:
        owner = getattr(inspect.unwrap(fn), "__self__", None)  # (under the one door's wrapper)
        if isinstance(owner, LocalPolicyActivities):
            return owner
    raise RuntimeError("the CPU worker serves no local policy offers")


def child_environ(client: Client, settings: Settings) -> dict[str, str]:
    """The environment of an agentkeel process the bench starts: the stack's settings and
    its dev server, no metrics endpoint, and none of the caller's Temporal profile
    (`TEMPORAL_*`: its TLS or API key are not the dev server's)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("TEMPORAL_")}
    env.update({k: v for k, v in settings.to_env().items() if v is not None})
    env[f"{ENV_PREFIX}TEMPORAL_ADDRESS"] = client.service_client.config.target_host
    env[f"{ENV_PREFIX}METRICS_ADDRESS"] = "off"
    return env


@asynccontextmanager
async def inference_child(client: Client, settings: Settings) -> AsyncIterator[None]:
    """`agentkeel worker inference` in a process of its own, with the stack's settings,
    polling before the block starts and stopped (drained) after it."""
    with tempfile.TemporaryDirectory(prefix="agentkeel-bench-") as folder:
        fleet = WorkerFleet(settings, child_environ(client, settings), Path(folder))
        fleet.start("inference", 1)
        try:
            await fleet.wait_polling(client)
            yield
        finally:
            fleet.stop()


def _cpu_worker(client: Client, settings: Settings, activities: list[Callable[..., Any]]) -> Any:
    return cpu_worker(
        client,
        settings.task_queue,
        activities,
        extra_workflows=[BenchReactWorkflow],
        sandboxed=settings.sandboxed_workflows(),
        inline_activations=settings.inline_activations(),
        slots=cpu_slots(settings),
    )
