"""Workers of the stack tier, started in the test process for one test: `make_stack` gives
each test its own task queues, tenant and (optionally) stand-in activities or policy, on the
session's dev server, Postgres and Redis; `stack` is one such with the defaults."""

from __future__ import annotations

import gc
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from typing import Any

import pytest
import redis.asyncio as aioredis
from redis.exceptions import RedisError
from temporalio.client import Client, WorkflowExecutionStatus, WorkflowHandle
from temporalio.service import RPCError, RPCStatusCode
from temporalio.worker import Worker

from agentkeel.activities.model_calls import InferenceActivities
from agentkeel.client.agent_client import AgentClient
from agentkeel.examples.shop.rules.policy import RulesPolicy
from agentkeel.inference.policy import Policy
from agentkeel.schemas.request import AgentRequest
from agentkeel.schemas.result import AgentResult
from agentkeel.settings.model import Settings, speculative_calls
from agentkeel.workers.policy_offers import unsure_forecast, usage_metering
from agentkeel.workers.resources import (
    InferenceResources,
    cpu_activities,
    inference_resources,
)
from agentkeel.workers.stand_ins import with_stand_ins
from agentkeel.workers.worker import cpu_worker, inference_worker
from agentkeel.workflows.agent import AgentWorkflow
from tests.support.pg import hand_shop_to


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


def new_task_queue() -> str:
    """A fresh task queue name; a stack on it serves tenant `tenant_of(queue)`."""
    return f"t-{uuid.uuid4().hex[:12]}"


def tenant_of(queue: str) -> str:
    """The tenant of the stack on `queue` (its shop data is handed to it)."""
    return f"tenant-{queue}"


@dataclass(frozen=True)
class _Session:
    """What every stack of a test shares: the session's servers and this test's database."""

    client: Client
    database_url: str
    carrier_url: str
    redis_url: str


@pytest.fixture
async def make_stack(
    client: Client, database_url: str, carrier_url: str, redis_url: str
) -> AsyncIterator[StackFactory]:
    """Start workers (optionally with stand-in activities) for this test only.

    At teardown the stacks' workflows still running are terminated, their workers stopped,
    and the Redis keys of their tenants deleted.
    """
    session = _Session(client, database_url, carrier_url, redis_url)
    stacks: list[AgentStack] = []
    async with AsyncExitStack() as exits:
        # Last, after the workers stop. `gc.collect()` runs the finalizers of this test's
        # closed redis pools now: redis-py's `ConnectionPool.__del__` imports a module, and
        # when a later GC runs it inside an import (the sandbox's, say), Python 3.11 raises
        # KeyError from importlib's module locks.
        exits.callback(gc.collect)
        exits.push_async_callback(_delete_tenant_keys, stacks)

        async def factory(**options: Any) -> AgentStack:
            """See `_start_stack` for the options."""
            stack = await _start_stack(exits, session, **options)
            stacks.append(stack)
            return stack

        try:
            yield factory
        finally:
            await _terminate_running(stacks)


async def _start_stack(
    exits: AsyncExitStack,
    session: _Session,
    *,
    redis_url: str | None = None,
    replace_activities: list[Callable[..., Any]] | None = None,
    policy: Policy | None = None,
    semantic: bool = False,
    inference_concurrency: int = 8,
    on: Client | None = None,
    policy_here: bool = False,
    **settings_overrides: Any,
) -> AgentStack:
    """`on`: another Temporal client (the time-skipping server's) than the session's.
    `policy_here`: the CPU worker serves `policy`'s steps itself, as local activities (as
    it serves the rules, or a model tier with `AGENTKEEL_LOCAL_POLICY=on`)."""
    temporal = on or session.client
    if policy is not None and type(policy) is not RulesPolicy and not policy_here:
        # The test's policy is the inference worker's: the CPU worker must not
        # answer policy steps itself with the rules.
        settings_overrides.setdefault("local_policy", "off")
    # A test that queues runs before any worker polls names the queue itself.
    queue = settings_overrides.pop("task_queue", None) or new_task_queue()
    carrier = settings_overrides.pop("carrier_url", None) or session.carrier_url
    settings = Settings(
        database_url=session.database_url,
        redis_url=redis_url or session.redis_url,
        task_queue=queue,
        # What the workers' own clients dial (the ledger's claim sweep): this test's server.
        temporal_address=temporal.service_client.config.target_host,
        # The embedder costs seconds per process: only the tests about it load it.
        semantic_cache="on" if semantic else "off",
        # Tests check behaviour, not speed, on a shared 2-core machine.
        semantic_deadline_ms=10_000,
        **settings_overrides,
    )
    activities = await exits.enter_async_context(
        cpu_activities(
            settings,
            local=policy if policy_here else None,
            domain_environ={"AGENTKEEL_SHOP_CARRIER_URL": carrier},
        )
    )
    activities = with_stand_ins(activities, replace_activities or [])
    # The inference worker's own clients: token streams and conversations.
    resources = await exits.enter_async_context(inference_resources(settings))
    for worker in _workers(
        temporal, settings, activities, resources, policy or RulesPolicy(), inference_concurrency
    ):
        await exits.enter_async_context(worker)
    stack = AgentStack(client=temporal, settings=settings, tenant=tenant_of(queue))
    await hand_shop_to(session.database_url, stack.tenant)
    return stack


def _workers(
    temporal: Client,
    settings: Settings,
    activities: list[Callable[..., Any]],
    resources: InferenceResources,
    policy: Policy,
    inference_concurrency: int,
) -> tuple[Worker, Worker]:
    """The CPU worker and the inference worker of one stack."""
    return (
        cpu_worker(
            temporal,
            settings.task_queue,
            activities,
            sandboxed=settings.sandboxed_workflows(),
            inline_activations=settings.inline_activations(),
            held_patches=settings.held_patch_ids(),
        ),
        inference_worker(
            temporal,
            settings.inference_task_queue,
            InferenceActivities(
                policy,
                redis=resources.redis,
                conversations=resources.conversations,
                outputs=resources.outputs,
                speculate_calls=speculative_calls(settings),
                forecast=unsure_forecast(settings),
                stream_plans=settings.plan_stream == "on",
                usage=usage_metering(settings, resources.redis),
            ),
            max_concurrent=inference_concurrency,
        ),
    )


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
