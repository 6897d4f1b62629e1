"""The graph's model-facing activities, served by the inference worker pool.

Each activity heartbeats while its model works, so a worker that dies mid-generation
is noticed within the heartbeat timeout rather than the whole start-to-close timeout,
and a cancelled run stops its generation (the engine aborts the request). The respond
activity publishes the answer's pieces to the run's token stream as they come.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import Any, TypeVar

import asyncpg
import redis.asyncio as aioredis
import structlog
from temporalio import activity
from temporalio.exceptions import ApplicationError

from agentkeel.activities.conversations import ConversationStore
from agentkeel.activities.forecast_store import ForecastStore
from agentkeel.activities.heartbeat import heartbeating
from agentkeel.activities.latency import LatencyBook, scope_of
from agentkeel.activities.model_slots import ModelSlots
from agentkeel.activities.outputs import OutputStore
from agentkeel.activities.plan_ahead import AHEAD_ROUTE, UnsureForecast, beside
from agentkeel.activities.plan_signals import early_reads
from agentkeel.activities.predictions import reading_of
from agentkeel.activities.span_notes import note
from agentkeel.activities.token_stream import TokenStream
from agentkeel.activities.usage_ledger import UsageMetering, counted
from agentkeel.inference.engines.protocol import ConstraintViolationError, EngineRequestError
from agentkeel.inference.metering import meter
from agentkeel.inference.policy import Policy
from agentkeel.schemas import metrics, names
from agentkeel.schemas import model_calls as calls
from agentkeel.schemas.errors import INVALID_MODEL_OUTPUT, MODEL_REQUEST_REJECTED
from agentkeel.schemas.speculation import MAX_SPECULATIVE_CALLS, predicted_calls
from agentkeel.schemas.tools import TOOLS

WithHistory = TypeVar("WithHistory", calls.RouteInput, calls.PlanInput, calls.RespondInput)

log = structlog.get_logger(__name__)

HISTORY_READ_TIMEOUT_S = 2.0
"""Longest a model step waits for its conversation's earlier turns before going without."""
HEARTBEAT_EVERY_S = 1.0
"""Well inside the workflow's model heartbeat timeout (`workflows.timeouts`)."""

T = TypeVar("T")


async def model_call(call: Awaitable[T]) -> T:
    """Run a policy call, heartbeating; errors a retry would only repeat become final.

    Decoding is greedy: the same prompt gives the same unusable output or the same
    refusal (a prompt too long) on every attempt. An engine that died or a server that
    went away stays retryable: another worker may serve the retry.
    """
    try:
        async with heartbeating(HEARTBEAT_EVERY_S):
            return await call
    except ConstraintViolationError as exc:
        raise ApplicationError(str(exc), type=INVALID_MODEL_OUTPUT, non_retryable=True) from exc
    except EngineRequestError as exc:
        raise ApplicationError(str(exc), type=MODEL_REQUEST_REJECTED, non_retryable=True) from exc


def _since_ms(start: datetime, at: datetime | None) -> float | None:
    """From this attempt's start to `at` (the model's own time to its first token); None
    for a time a policy gave without a zone, rather than fail the answer over a metric."""
    if at is None or at.tzinfo is None:
        return None
    return (at - start).total_seconds() * 1000


class InferenceActivities:
    """Owns the policy (and through it the engines) for the life of the worker."""

    def __init__(
        self,
        policy: Policy,
        *,
        redis: aioredis.Redis | None = None,
        conversations: ConversationStore | None = None,
        outputs: OutputStore | None = None,
        speculate_calls: int = 4,
        latencies: LatencyBook | None = None,
        forecast: UnsureForecast | None = None,
        model_slots: ModelSlots | None = None,
        stream_plans: bool = True,
        usage: UsageMetering | None = None,
    ) -> None:
        """`redis`: where token streams go; None publishes nothing (answers still return).
        `conversations`: where earlier turns are read; None gives prompts no history.
        `outputs`: where large step outputs are read back; None leaves them references.
        `speculate_calls`: most reads an unsure route proposes to start while the heavy
        model plans (`AGENTKEEL_SPECULATION_MAX_CALLS`; 0 when `AGENTKEEL_SPECULATION=off`).
        `latencies`: where plan and respond durations are recorded (default: `redis`).
        `forecast`: when to plan beside the router (`AGENTKEEL_PLAN_AHEAD`; default auto).
        `model_slots`: the fleet's cap on model calls in flight (default: none).
        `stream_plans`: signal a run each read its planner writes, as soon as it is written,
        where the run asks (`AGENTKEEL_PLAN_STREAM`; `activities.plan_signals`).
        `usage`: the price table and where usage is counted (default: unpriced, uncounted)."""
        self._policy = policy
        self._redis = redis
        self._conversations = conversations
        self._outputs = outputs
        self._speculate_calls = min(max(speculate_calls, 0), MAX_SPECULATIVE_CALLS)
        self._latencies = latencies or LatencyBook(redis)
        self._forecast = forecast or UnsureForecast()
        if redis is not None and self._forecast.store is None:
            self._forecast.store = ForecastStore(redis)  # the fleet's, not this worker's
        self._slots = model_slots
        self._stream_plans = stream_plans
        self.usage_metering = usage or UsageMetering()

    async def _model(self, call: Awaitable[T]) -> T:
        """`model_call`, inside one of the fleet's model slots when there is a cap."""
        if self._slots is None:
            return await model_call(call)
        async with self._slots.slot():
            return await model_call(call)

    @activity.defn(name=names.ROUTE)
    @counted
    async def route(self, request: calls.RouteInput) -> calls.RouteResult:
        request = await self._with_history(request)
        # The route decides which side effects the run may have: it reads the customer's
        # own earlier questions, never earlier answers or tool results (untrusted text).
        asked_only = [
            calls.ConversationTurn(question=t.question, answer="") for t in request.history
        ]
        scope = scope_of(activity.info().task_queue)
        await self._forecast.ready(scope, request.tenant)
        async with early_reads(request.stream_steps and self._stream_plans):
            routed, ahead = await self._routed(request, asked_only, scope)
        served = routed.confident and routed.draft_plan is not None
        self._forecast.observe(request.tenant, unsure=not served, scope=scope)
        if ahead is not None:
            routed.planned = ahead
            if ahead.route is not None:
                ahead.route = beside(routed.route, ahead.route)
        decisions = meter().create_counter(
            metrics.ROUTER_DECISIONS, "Routes decided, by the tier that plans the run"
        )
        basis = routed.route.basis.value if routed.route.basis else "unstated"
        decisions.add(1, {"tier": routed.route.tier.value, "basis": basis})
        if not routed.confident and routed.planned is None:
            # The heavy model will plan: the reads this reading predicts may start meanwhile.
            routed.reading = routed.reading or reading_of(request.question)
            routed.speculate = predicted_calls(routed.reading, TOOLS, limit=self._speculate_calls)
        note(
            policy=self._policy.name,
            tier=routed.route.tier.value,
            intent=routed.route.intent,
            confidence=routed.route.measured_confidence,
            confidence_basis=basis,
            confident=routed.confident,
        )
        return routed

    async def _routed(
        self, request: calls.RouteInput, asked_only: list[calls.ConversationTurn], scope: str
    ) -> tuple[calls.RouteResult, calls.PlanResult | None]:
        """The router's answer, and the plan made beside it where one was and serves."""
        ahead = self._plan_ahead(request, scope)
        # The router's request goes out first (the planner's task starts at its first
        # await): a server with one slot serves requests in turn, and a confident route
        # must not wait behind a whole plan. (With a batching server, asking the planner
        # first would save only the 1.5 ms the router's request takes to build.)
        try:
            routed = await self._model(
                self._policy.route(request.model_copy(update={"history": asked_only}))
            )
        except BaseException:
            if ahead is not None:
                ahead.cancel()
            raise
        if ahead is None:
            return routed, None
        if routed.confident and routed.draft_plan is not None:
            ahead.cancel()  # the router's draft plan serves: the planner's work is dropped
            # Awaited, so what it spent is in this activity's usage before it is settled.
            await asyncio.gather(ahead, return_exceptions=True)
            return routed, None
        return routed, await _unless_failed(ahead)

    def _plan_ahead(
        self, request: calls.RouteInput, scope: str
    ) -> asyncio.Task[calls.PlanResult] | None:
        """The planner, started now on the request alone, where the route is forecast to
        be unsure (`activities.plan_ahead`); None otherwise."""
        release = self._forecast.plan_ahead(request.tenant, scope) if request.plan_ahead else None
        if release is None:
            return None
        asked = request.model_dump(exclude={"plan_ahead"})
        planning = calls.PlanInput(**asked, route=AHEAD_ROUTE)
        task = asyncio.create_task(self._planned(planning))
        task.add_done_callback(release)
        return task

    async def _planned(self, request: calls.PlanInput) -> calls.PlanResult:
        started = time.perf_counter()
        planned = await self._model(self._policy.plan(request))
        self._observe(f"plan:{planned.tier.value}", started)
        return planned

    @activity.defn(name=names.PLAN)
    @counted
    async def plan(self, request: calls.PlanInput) -> calls.PlanResult:
        request = await self._with_history(request)
        async with early_reads(request.stream_steps and self._stream_plans):
            planned = await self._planned(request)
        note(
            policy=self._policy.name,
            tier=planned.tier.value,
            plan_steps=len(planned.plan.steps),
            plan_error=planned.error.type if planned.error else None,
        )
        return planned

    @activity.defn(name=names.JOIN)
    @counted
    async def join(self, request: calls.JoinInput) -> calls.JoinResult:
        return await self._model(self._policy.join(request))

    @activity.defn(name=names.RESPOND)
    @counted
    async def respond(self, request: calls.RespondInput) -> calls.RespondResult:
        request = await self._with_history(request)
        if self._outputs is not None and any(s.output_ref for s in request.steps):
            request.steps = await self._outputs.resolved(request.steps)
        info = activity.info()
        # Each attempt opens with a reset marked with its number: a reader drops what an
        # earlier, failed attempt had already shown. A retry sends it at once; a first
        # attempt has nothing to drop, so its reset goes out with its first token (one
        # Redis round trip fewer per run).
        stream = TokenStream.for_run(
            self._redis, info.workflow_id, request.run_id or info.workflow_run_id, info.attempt
        )
        if info.attempt > 1:
            await stream.begin()
        started = time.perf_counter()
        result = await self._model(self._policy.respond(request, stream.publish))
        self._observe(f"respond:{request.route.tier.value}", started)
        if request.left_out:
            # The run traded parts of its plan for its deadline: the answer says which.
            said = " ".join(request.left_out)
            result.answer = f"{result.answer.rstrip()} {said}" if result.answer else said
            await stream.publish(f" {said}")
        await stream.finish()
        if result.first_token_at is None:
            result.first_token_at = stream.first_token_at
        note(
            policy=self._policy.name,
            tier=request.route.tier.value,
            first_token_ms=_since_ms(info.started_time, result.first_token_at),
        )
        return result

    def _observe(self, what: str, started: float) -> None:
        elapsed = (time.perf_counter() - started) * 1000
        self._latencies.observe(scope_of(activity.info().task_queue), what, elapsed)

    async def _with_history(self, request: WithHistory) -> WithHistory:
        """The request with its conversation's earlier turns, read here by reference."""
        if self._conversations is None or request.conversation_id is None or request.history:
            return request
        try:
            # Bounded and optional: a stalled Postgres must not cost the model step its
            # heartbeats (it has not started heartbeating yet); the prompt goes without.
            async with asyncio.timeout(HISTORY_READ_TIMEOUT_S):
                turns = await self._conversations.recent_turns(
                    request.tenant, request.conversation_id, request.audience
                )
        except (TimeoutError, OSError, asyncpg.PostgresError, asyncpg.InterfaceError) as exc:
            log.warning("conversation_history_unavailable", error=repr(exc))
            return request
        return request.model_copy(update={"history": turns})

    def all(self) -> list[Callable[..., Any]]:
        return [self.route, self.plan, self.join, self.respond]


async def _unless_failed(planning: asyncio.Task[calls.PlanResult]) -> calls.PlanResult | None:
    """The plan made beside the router, or None if that failed: the run then plans after
    the route, as without planning ahead (a failed guess never fails the route)."""
    try:
        return await planning
    except Exception as exc:
        log.warning("plan_ahead_failed", error=repr(exc))
        return None
