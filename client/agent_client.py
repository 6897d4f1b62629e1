"""The Python client helper: the cache fast path, coalescing, then `AgentWorkflow`.

Services and `agentkeel ask` use `AgentClient`. A question whose answer is in the
exact tier costs one Redis round trip (and, once a second at most, a read of the version
the workers serve) and starts no workflow. Otherwise identical requests in flight at the
same moment share one run (`client.workflow_ids`).

    client = await AgentClient.connect(Settings.from_env())
    try:
        result = await client.ask(AgentRequest(question="Where is order 1001?"))
    finally:
        await client.close()
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import redis.asyncio as aioredis
from temporalio.client import Client, WorkflowHandle
from temporalio.common import WorkflowIDConflictPolicy, WorkflowIDReusePolicy

from agentkeel.client.answer_watch import first_answer
from agentkeel.client.approvals import decide_approval
from agentkeel.client.budgets import BudgetExhaustedError, WindowBudgets, WindowLimits, held_under
from agentkeel.client.fast_path import AnswerCache, OutputReader
from agentkeel.client.readers import ExactAnswers, PostgresOutputs
from agentkeel.client.token_follow import OnEvent, TokenReader, relay_until
from agentkeel.client.workflow_ids import coalesced_workflow_id, new_workflow_id, ui_summary
from agentkeel.schemas.approvals import ApprovalAnswer, ApprovalDecision
from agentkeel.schemas.lanes import Lane, lane_of, run_priority
from agentkeel.schemas.names import AGENT_WORKFLOW, PROGRESS_QUERY
from agentkeel.schemas.plugin import agentkeel_plugin
from agentkeel.schemas.progress import RunProgress
from agentkeel.schemas.request import AgentRequest
from agentkeel.schemas.result import AgentResult, CacheStatus, Timings
from agentkeel.schemas.tokens import token_stream_key
from agentkeel.schemas.tools.catalog import catalog_version
from agentkeel.schemas.usage import RunBudget, RunUsage
from agentkeel.sdk.serving import active_domain
from agentkeel.settings.connections import connect_temporal, redis_client
from agentkeel.settings.model import Settings

__all__ = [
    "AgentClient",
    "BudgetExhaustedError",
    "OnStarted",
    "coalesced_workflow_id",
    "connect_client",
]


async def connect_client(settings: Settings) -> Client:
    """A Temporal client for starting and steering runs: the data converter, no LangGraph."""
    return await connect_temporal(settings, [agentkeel_plugin()])


OnStarted = Callable[[str], None]
"""Told the workflow id of the run an ask started."""


class AgentClient:
    def __init__(
        self,
        temporal: Client,
        *,
        task_queue: str,
        version: str,
        answers: AnswerCache | None = None,
        outputs: OutputReader | None = None,
        redis: aioredis.Redis | None = None,
        budgets: WindowBudgets | None = None,
        run_budget: RunBudget | None = None,
        lanes: bool = True,
    ) -> None:
        """`answers`: the exact tier the fast path reads (None: every ask starts a run).
        `outputs`: where outputs kept by reference are read back, so results come back
        complete (None leaves them as `output_ref`). `redis`: token streams.
        `budgets`: the budgets per key and tenant checked before a run starts (None: none).
        `run_budget`: the deployment's run budget, a ceiling on `options.budget`.
        `lanes`: runs start with their lane's priority and their tenant as fairness key
        (`schemas.lanes`); False: Temporal's default priority for all."""
        self.temporal = temporal
        self._task_queue = task_queue
        self._version = version
        self._answers = answers
        self._outputs = outputs
        self._redis = redis
        self._budgets = budgets
        self._run_budget = run_budget
        self._lanes = lanes

    @classmethod
    def from_settings(
        cls, temporal: Client, settings: Settings, *, redis_url: str | None = None
    ) -> AgentClient:
        """A client for `settings`; given a Redis URL (here or in settings) it has a fast
        path and token streams."""
        # Identical requests coalesce within one catalog; the fast path reads under the
        # version the workers publish, whatever this client's own catalog says.
        version = catalog_version()
        url = redis_url or settings.redis_url
        redis = None if url is None else redis_client(url)
        answers = (
            None
            if redis is None
            else ExactAnswers(
                redis, task_queue=settings.task_queue, namespace=settings.temporal_namespace
            )
        )
        outputs = None if settings.database_url is None else PostgresOutputs(settings.database_url)
        return cls(
            temporal,
            task_queue=settings.task_queue,
            version=version,
            answers=answers,
            outputs=outputs,
            redis=redis,
            budgets=None
            if redis is None
            else WindowBudgets(redis, settings.task_queue, WindowLimits.from_settings(settings)),
            run_budget=settings.run_budget(),
            lanes=settings.priority_lanes,
        )

    @classmethod
    async def connect(
        cls, settings: Settings | None = None, *, redis_url: str | None = None
    ) -> AgentClient:
        """A client for `settings` (default: the `AGENTKEEL_*` environment's,
        `Settings.from_env()`), connected to its Temporal."""
        settings = settings or Settings.from_env()
        temporal = await connect_client(settings)
        return cls.from_settings(temporal, settings, redis_url=redis_url)

    @property
    def redis(self) -> aioredis.Redis | None:
        """The Redis of the fast path and token streams, if this client has one."""
        return self._redis

    async def close(self) -> None:
        if self._answers is not None:
            await self._answers.close()
        elif self._redis is not None:
            await self._redis.aclose()

    async def ask(
        self,
        request: AgentRequest,
        *,
        coalesce: bool = True,
        workflow_id: str | None = None,
        on_started: OnStarted | None = None,
        lane: Lane | None = None,
    ) -> AgentResult:
        """The run's result; `on_started` is told the workflow id once a run is started (a
        fast-path answer starts none)."""
        cached = await self.cached_answer(request)
        if cached is not None:
            return await self.resolve_outputs(cached)
        handle = await self.start(request, coalesce=coalesce, workflow_id=workflow_id, lane=lane)
        if on_started is not None:
            on_started(handle.id)
        # The run's answer as soon as it is recorded (`schemas.answers`), or its result.
        answer = await first_answer(
            handle.result(), self._redis, handle.id, handle.result_run_id or ""
        )
        return await self.resolve_outputs(answer)

    async def resolve_outputs(self, result: AgentResult) -> AgentResult:
        """`result` with every output kept by reference read back from Postgres."""
        if self._outputs is None or not any(s.output_ref for s in result.steps):
            return result
        steps = await self._outputs.resolved(result.steps)
        return result.model_copy(update={"steps": steps})

    async def ask_streaming(
        self,
        request: AgentRequest,
        *,
        on_event: OnEvent,
        coalesce: bool = True,
        workflow_id: str | None = None,
        on_started: OnStarted | None = None,
        lane: Lane | None = None,
    ) -> AgentResult:
        """`ask`, handing the answer's token events to `on_event` as the model writes them.

        A fast-path hit, or a client without Redis, streams nothing: `on_event` is never
        called and the result holds the answer. Streaming never fails the ask.
        """
        cached = await self.cached_answer(request)
        if cached is not None:
            return await self.resolve_outputs(cached)
        handle = await self.start(request, coalesce=coalesce, workflow_id=workflow_id, lane=lane)
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
        if self._answers is None or not options.use_cache or options.refresh_cache:
            return None
        if request.plan is not None:
            return None  # a plan the caller brings runs; no cached answer stands in for it
        if active_domain().actor_problem(request.actor.role, request.actor.subject):
            return None  # the run refuses such an actor; no audience's answers are its
        started = time.perf_counter()
        hit = await self._answers.exact_answer(request)
        if hit is None:
            return None
        took = (time.perf_counter() - started) * 1000
        return hit.model_copy(
            update={
                "cache": CacheStatus.EXACT,
                "timings_ms": Timings(cache=took, total=took),
                "workflow_id": "",  # answered before any workflow: nothing to look up in the UI
                "run_id": "",
                "warnings": [],
                "usage": RunUsage(cached=True),  # no model was called for it
            }
        )

    async def start(
        self,
        request: AgentRequest,
        *,
        coalesce: bool = True,
        workflow_id: str | None = None,
        lane: Lane | None = None,
    ) -> WorkflowHandle[Any, AgentResult]:
        """Start `AgentWorkflow` by its public name (this side never imports the workflow),
        in `lane` (default: `schemas.lanes.lane_of(request)`, interactive unless a watch).
        `BudgetExhaustedError`: its key or tenant spent this window's budget (`budgets`)."""
        lane = lane or lane_of(request)
        request = held_under(request, self._run_budget)
        if self._budgets is not None:
            await self._budgets.check(request)
        if workflow_id is not None:
            # The caller's own id: Temporal's defaults apply (a duplicate start fails).
            return await self._start(request, workflow_id, lane)
        if not coalesce:
            return await self._start(request, new_workflow_id(), lane)
        return await self._start(
            request,
            coalesced_workflow_id(request, self._version),
            lane,
            # A second identical request while the first runs attaches to it (two identical
            # refund requests in flight are one refund); once it has finished, the same id
            # may run again, so a later ask gets a fresh run.
            id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
            id_reuse_policy=WorkflowIDReusePolicy.ALLOW_DUPLICATE,
        )

    async def approve(self, workflow_id: str, decision: ApprovalDecision) -> ApprovalAnswer:
        """Decide the run's pending approval `decision.approval_id` (the `approve` update;
        `ApprovalRefused` says why one is refused: `client.approvals.decide_approval`)."""
        return await decide_approval(self.temporal, workflow_id, decision)

    async def cancel(self, workflow_id: str) -> None:
        """Ask the run to stop; its result then raises `WorkflowFailureError` (cancelled)."""
        await self.temporal.get_workflow_handle(workflow_id).cancel()

    async def progress(self, workflow_id: str) -> RunProgress:
        """The run's `progress` query: stage, steps, approvals, what it waits on."""
        handle = self.temporal.get_workflow_handle(workflow_id)
        return await handle.query(PROGRESS_QUERY, result_type=RunProgress)

    async def _start(
        self, request: AgentRequest, workflow_id: str, lane: Lane, **policies: Any
    ) -> WorkflowHandle[Any, AgentResult]:
        summary, details = ui_summary(request)
        if self._lanes:
            policies["priority"] = run_priority(lane, request.tenant)
        return await self.temporal.start_workflow(
            AGENT_WORKFLOW,
            request,
            id=workflow_id,
            task_queue=self._task_queue,
            result_type=AgentResult,
            static_summary=summary,
            static_details=details,
            # A CPU worker on this same `Client` gets the first workflow task in the start's
            # reply (a dispatch fewer); elsewhere the SDK does not ask. Interactive runs
            # only: an eager task skips the queue, and with it the lanes.
            request_eager_start=lane is Lane.INTERACTIVE or not self._lanes,
            **policies,
        )
