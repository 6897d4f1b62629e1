"""The Python client helper: the cache fast path, coalescing, then `AgentWorkflow`.

Services and `agentkeel ask` use `AgentClient`. A question whose answer is in the
exact tier costs one Redis round trip (and, once a second at most, a read of the version
the workers serve: `activities.cache.served_version`) and starts no workflow. Otherwise
identical requests in flight at the same moment share one run: the workflow id is
derived from the request, and Temporal's conflict policy attaches the second caller to
the first run.
"""

from __future__ import annotations

import hashlib
import time
import uuid
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import asyncpg
import redis.asyncio as aioredis
from temporalio.client import Client, WorkflowHandle
from temporalio.common import WorkflowIDConflictPolicy, WorkflowIDReusePolicy

from agentkeel.activities.cache.backend import CacheBackend, CacheUnavailable
from agentkeel.activities.cache.path_cache import PathCache, normalize_question
from agentkeel.activities.cache.served_version import ServedVersion
from agentkeel.activities.outputs import OutputStore
from agentkeel.schemas.names import AGENT_WORKFLOW, PROGRESS_QUERY
from agentkeel.schemas.progress import RunProgress
from agentkeel.schemas.request import AgentRequest
from agentkeel.schemas.result import AgentResult, CacheStatus, Timings
from agentkeel.schemas.tokens import token_stream_key
from agentkeel.schemas.tools.catalog import active_domain
from agentkeel.workers.client.token_follow import OnEvent, TokenReader, relay_until
from agentkeel.workers.connections import connect_temporal, redis_client
from agentkeel.workers.model_tiers import effective_cache_version
from agentkeel.workers.plugin import agentkeel_plugin
from agentkeel.workers.settings import Settings


async def connect_client(settings: Settings) -> Client:
    """A Temporal client for starting and steering runs: the data converter, no LangGraph."""
    return await connect_temporal(settings, [agentkeel_plugin()])


OnStarted = Callable[[str], None]
"""Told the workflow id of the run an ask started."""


def new_workflow_id(prefix: str = "ask") -> str:
    return f"{prefix}-{uuid.uuid4().hex[:16]}"


def coalesced_workflow_id(request: AgentRequest, version: str) -> str:
    """Equal for requests that must give the same answer, different otherwise."""
    identity = "\x1f".join(
        (
            version,
            request.tenant,
            normalize_question(request.question),
            request.conversation_id or "",
            request.options.model_dump_json(),
            # Two actors never share a run (they may see different rows); one request id
            # shares it, whatever else is equal.
            request.actor.model_dump_json(),
            request.request_id or "",
            # Two plans a caller brings are two automations, whatever their question says.
            request.plan.model_dump_json() if request.plan is not None else "",
        )
    )
    return "agent-" + hashlib.sha256(identity.encode()).hexdigest()[:32]


class AgentClient:
    def __init__(
        self,
        temporal: Client,
        *,
        task_queue: str,
        version: str,
        paths: PathCache | None = None,
        redis: aioredis.Redis | None = None,
        database_url: str | None = None,
        namespace: str = "default",
    ) -> None:
        """`database_url`: where outputs kept by reference are read back, so results come
        back complete; None leaves them as `output_ref`. `namespace`: the Temporal
        namespace of `task_queue` (whose workers' published version the fast path uses)."""
        self.temporal = temporal
        self._task_queue = task_queue
        self._version = version
        self._paths = paths
        self._redis = redis
        self._database_url = database_url
        # The version the workers serve: the fast path looks paths up under it.
        self._served = None if redis is None else ServedVersion(redis, task_queue, namespace)

    @classmethod
    def from_settings(
        cls, temporal: Client, settings: Settings, *, redis_url: str | None = None
    ) -> AgentClient:
        """A client for `settings`; given a Redis URL (here or in settings) it has a fast path.

        The fast path reads paths under the version the workers publish
        (`activities.cache.served_version`), so a client needs neither the domain's MCP
        servers nor a restart when the workers' catalog changes."""
        version = effective_cache_version(settings)
        url = redis_url or settings.redis_url
        database_url = settings.database_url
        if url is None:
            return cls(
                temporal,
                task_queue=settings.task_queue,
                version=version,
                database_url=database_url,
            )
        redis = redis_client(url)
        plan_ttl = timedelta(seconds=settings.cache_ttl_s)
        backend = CacheBackend(redis, index_ttl=plan_ttl)
        paths = PathCache(backend, version=version, plan_ttl=plan_ttl)
        return cls(
            temporal,
            task_queue=settings.task_queue,
            version=version,
            paths=paths,
            redis=redis,
            database_url=database_url,
            namespace=settings.temporal_namespace,
        )

    @classmethod
    async def connect(cls, settings: Settings, *, redis_url: str | None = None) -> AgentClient:
        """A client for `settings`, connected to its Temporal."""
        temporal = await connect_client(settings)
        return cls.from_settings(temporal, settings, redis_url=redis_url)

    @property
    def redis(self) -> aioredis.Redis | None:
        """The Redis of the fast path and token streams, if this client has one."""
        return self._redis

    async def close(self) -> None:
        if self._redis is not None:
            await self._redis.aclose()

    async def ask(
        self,
        request: AgentRequest,
        *,
        coalesce: bool = True,
        workflow_id: str | None = None,
        on_started: OnStarted | None = None,
    ) -> AgentResult:
        """The run's result; `on_started` is told the workflow id once a run is started (a
        fast-path answer starts none)."""
        cached = await self.cached_answer(request)
        if cached is not None:
            return await self.resolve_outputs(cached)
        handle = await self.start(request, coalesce=coalesce, workflow_id=workflow_id)
        if on_started is not None:
            on_started(handle.id)
        return await self.resolve_outputs(await handle.result())

    async def resolve_outputs(self, result: AgentResult) -> AgentResult:
        """`result` with every output kept by reference read back from Postgres."""
        if self._database_url is None or not any(s.output_ref for s in result.steps):
            return result
        connection = await asyncpg.connect(self._database_url)
        try:
            steps = await OutputStore(connection).resolved(result.steps)
        finally:
            await connection.close()
        return result.model_copy(update={"steps": steps})

    async def ask_streaming(
        self,
        request: AgentRequest,
        *,
        on_event: OnEvent,
        coalesce: bool = True,
        workflow_id: str | None = None,
        on_started: OnStarted | None = None,
    ) -> AgentResult:
        """`ask`, handing the answer's token events to `on_event` as the model writes them.

        A fast-path hit, or a client without Redis, streams nothing: `on_event` is never
        called and the result holds the answer. Streaming never fails the ask.
        """
        cached = await self.cached_answer(request)
        if cached is not None:
            return await self.resolve_outputs(cached)
        handle = await self.start(request, coalesce=coalesce, workflow_id=workflow_id)
        if on_started is not None:
            on_started(handle.id)
        # result_run_id is the run the start resolved to: with USE_EXISTING, the run this
        # caller attached to, which is the one whose respond activity publishes.
        run_id = handle.result_run_id
        if self._redis is None or run_id is None:
            return await self.resolve_outputs(await handle.result())
        # No idle timeout: planning and tools may take long before the first token, and
        # the run's result ends the follow anyway.
        reader = TokenReader(self._redis, token_stream_key(handle.id, run_id), idle_timeout_s=None)
        return await self.resolve_outputs(await relay_until(reader, handle.result(), on_event))

    async def cached_answer(self, request: AgentRequest) -> AgentResult | None:
        """The exact tier's answer, read straight from Redis; None on a miss or no Redis."""
        options = request.options
        if self._paths is None or not options.use_cache or options.refresh_cache:
            return None
        if request.plan is not None:
            return None  # a plan the caller brings runs; no cached answer stands in for it
        if active_domain().actor_problem(request.actor.role, request.actor.subject):
            return None  # the run refuses such an actor; no audience's answers are its
        started = time.perf_counter()
        served = (
            self._version if self._served is None else await self._served.current(self._version)
        )
        if served is None:
            return None  # withdrawn, or Redis cannot say: the run's own lookup decides
        if served != self._paths.version:  # kept until the workers' version moves again
            self._paths = self._paths.under(served)
        try:
            found = await self._paths.lookup(
                request.tenant,
                request.question,
                conversation_id=request.conversation_id,
                semantic=False,
                audience=request.actor.audience,
            )
        except CacheUnavailable:
            return None  # the workflow's own lookup will say so in the result
        if found.hit is None:
            return None
        took = (time.perf_counter() - started) * 1000
        return found.hit.model_copy(
            update={
                "cache": CacheStatus.EXACT,
                "timings_ms": Timings(cache=took, total=took),
                "workflow_id": "",  # answered before any workflow: nothing to look up in the UI
                "run_id": "",
                "warnings": [],
            }
        )

    async def start(
        self, request: AgentRequest, *, coalesce: bool = True, workflow_id: str | None = None
    ) -> WorkflowHandle[Any, AgentResult]:
        """Start `AgentWorkflow` by its public name (this side never imports the workflow)."""
        if workflow_id is not None:
            # The caller's own id: Temporal's defaults apply (a duplicate start fails).
            return await self._start(request, workflow_id)
        if not coalesce:
            return await self._start(request, new_workflow_id())
        return await self._start(
            request,
            coalesced_workflow_id(request, self._version),
            # A second identical request while the first runs attaches to it (two identical
            # refund requests in flight are one refund); once it has finished, the same id
            # may run again, so a later ask gets a fresh run.
            id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
            id_reuse_policy=WorkflowIDReusePolicy.ALLOW_DUPLICATE,
        )

    async def progress(self, workflow_id: str) -> RunProgress:
        """The run's `progress` query: stage, steps, approvals, what it waits on."""
        handle = self.temporal.get_workflow_handle(workflow_id)
        return await handle.query(PROGRESS_QUERY, result_type=RunProgress)

    async def _start(
        self, request: AgentRequest, workflow_id: str, **policies: Any
    ) -> WorkflowHandle[Any, AgentResult]:
        summary, details = ui_summary(request)
        return await self.temporal.start_workflow(
            AGENT_WORKFLOW,
            request,
            id=workflow_id,
            task_queue=self._task_queue,
            result_type=AgentResult,
            static_summary=summary,
            static_details=details,
            # Where a CPU worker runs on this same `Client` (an application that builds
            # both on one connection), the server hands the run's first workflow task back
            # in the start's reply (a dispatch fewer); elsewhere the SDK does not ask.
            request_eager_start=True,
            **policies,
        )


SUMMARY_CHARS = 80


def ui_summary(request: AgentRequest) -> tuple[str, str]:
    """What the Web UI lists for a run (the question, shortened) and shows on its page
    (tenant, actor, conversation): readable runs instead of opaque ids. Set at start, so
    they are in the run's first event and visible before it does anything."""
    question = " ".join(request.question.split())
    if len(question) > SUMMARY_CHARS:
        question = question[: SUMMARY_CHARS - 1] + "…"
    actor = request.actor
    who = actor.role + (f" {actor.name}" if actor.name else "")
    if actor.subject is not None:
        who += f" (subject {actor.subject})"
    lines = [f"**tenant** {request.tenant}", f"**actor** {who}"]
    if request.conversation_id:
        lines.append(f"**conversation** {request.conversation_id}")
    if request.request_id:
        lines.append(f"**request** {request.request_id}")
    return question, "  \n".join(lines)
