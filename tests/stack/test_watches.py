"""Long-running plans on a server: days of `wait` and watching on a time-skipping server, and
on the real dev server against Postgres a watch that answers when the order ships, continues
as new without repeating its side effect, and streams its answer to the client."""

from __future__ import annotations

import asyncio
import time
from datetime import timedelta
from typing import Any

import asyncpg
import pytest
import redis.asyncio as aioredis
from temporalio.client import WorkflowExecutionStatus, WorkflowFailureError, WorkflowHandle
from temporalio.exceptions import ApplicationError
from temporalio.testing import WorkflowEnvironment

from agentkeel.client.watches import format_waiting
from agentkeel.client.watches import waiting_runs as list_waiting_runs
from agentkeel.examples.shop.demo_watch import ship_order
from agentkeel.schemas import errors, names
from agentkeel.schemas.answers import ANSWER_FIELD, answer_key
from agentkeel.schemas.model_calls import RouteInput, RouteResult
from agentkeel.schemas.progress import RunProgress
from agentkeel.schemas.request import AgentRequest, RunOptions
from agentkeel.schemas.result import AgentResult, StepStatus
from agentkeel.schemas.route import Route, Tier
from agentkeel.schemas.tokens import TokenEvent, TokenEventType
from tests.support.agent_stack import StackFactory
from tests.support.fakes import FakeScriptedPolicy
from tests.support.plans import watch

PROCESSING_ORDER = 1002
"""Seed data: processing, no tracking number yet."""


# -- time-skipping server: days of waiting in seconds -------------------------------------


async def test_a_wait_and_a_watch_over_days_on_skipped_time(
    make_stack: StackFactory, time_skipping_env: WorkflowEnvironment
) -> None:
    plan = {
        "steps": [
            {"id": "w", "tool": "wait", "args": {"seconds": 2 * 86400}},
            watch("s1", PROCESSING_ORDER, ["shipped"], every_s=6 * 3600, timeout_s=3 * 86400)
            | {"after": ["w"]},
        ]
    }
    stack = await make_stack(on=time_skipping_env.client, policy=FakeScriptedPolicy([plan]))
    started = time.monotonic()
    result = await asyncio.wait_for(stack.ask("watch order 1002 for days"), timeout=120)
    waited, watched = result.steps
    assert waited.status is StepStatus.SUCCEEDED and waited.output["waited_s"] >= 2 * 86400
    # every 6 h from 0 h: the run at 72 h is on the deadline (a little past it in real time)
    assert watched.status is StepStatus.TIMED_OUT and watched.runs in (12, 13)
    assert watched.finished_at is not None and waited.started_at is not None
    assert watched.finished_at - waited.started_at >= timedelta(days=2, hours=66)
    assert "stopped watching" in result.answer
    assert time.monotonic() - started < 90, "days of waiting took days"


# -- the real dev server and Postgres ------------------------------------------------------


async def until_waiting(handle: WorkflowHandle[Any, Any], timeout_s: float = 20) -> RunProgress:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        progress: RunProgress = await handle.query(names.PROGRESS_QUERY, result_type=RunProgress)
        if progress.waiting:
            return progress
        await asyncio.sleep(0.2)
    raise AssertionError("the run never showed a wait")


async def test_tell_me_when_an_order_ships_waits_then_answers_when_postgres_says_so(
    make_stack: StackFactory, orders_db: asyncpg.Pool
) -> None:
    stack = await make_stack()
    handle = await stack.start(
        f"Tell me when order {PROCESSING_ORDER} ships", options={"watch_every_s": 1}
    )
    progress = await until_waiting(handle)
    [waiting] = progress.waiting
    assert waiting.tool == "get_order" and "shipped" in waiting.what
    assert progress.stage.startswith("waiting")
    description = await handle.describe()
    assert description.status == WorkflowExecutionStatus.RUNNING
    waiting_runs = [
        w.id
        async for w in stack.client.list_workflows(
            f'AgentWaiting = true AND WorkflowId = "{handle.id}"'
        )
    ]
    for _ in range(50):  # visibility is eventually consistent
        if waiting_runs:
            break
        await asyncio.sleep(0.2)
        waiting_runs = [
            w.id
            async for w in stack.client.list_workflows(
                f'AgentWaiting = true AND WorkflowId = "{handle.id}"'
            )
        ]
    assert waiting_runs == [handle.id]
    listed = [r for r in await list_waiting_runs(stack.client) if r.workflow_id == handle.id]
    assert [w.tool for r in listed for w in r.waiting] == ["get_order"]  # `agentkeel watches`
    assert "get_order" in format_waiting(listed)
    await asyncio.sleep(1.5)
    await ship_order(orders_db, PROCESSING_ORDER)
    shipped_at = time.monotonic()
    result: AgentResult = await asyncio.wait_for(handle.result(), timeout=15)
    assert time.monotonic() - shipped_at < 10
    order = next(s for s in result.steps if s.tool == "get_order")
    assert order.status is StepStatus.SUCCEEDED and order.runs >= 2
    assert order.output["status"] == "shipped"
    assert f"Order {PROCESSING_ORDER} is shipped" in result.answer
    assert next(s for s in result.steps if s.tool == "track_shipment").status in (
        StepStatus.SUCCEEDED,
        StepStatus.FAILED,  # the carrier stand-in may not know a parcel made up by the test
    )
    final = await handle.describe()
    assert final.search_attributes.get("AgentWaiting") in (None, [])


class RefundAndWatch(FakeScriptedPolicy):
    """Routes as a refund the request asked for; plans a refund and a watch."""

    async def route(self, request: RouteInput) -> RouteResult:
        route = Route(intent="refund+order_status", confidence=0.5, tier=Tier.RULES)
        return RouteResult(route=route, confident=False)


async def test_a_long_watch_continues_as_new_twice_without_repeating_its_side_effect(
    make_stack: StackFactory, orders_db: asyncpg.Pool
) -> None:
    refundable = await orders_db.fetchval(
        "SELECT order_id FROM orders WHERE status = 'delivered' AND total_cents >= 500 "
        "ORDER BY order_id LIMIT 1"
    )
    plan = {
        "steps": [
            {
                "id": "r",
                "tool": "create_refund",
                "args": {"order_id": refundable, "amount_cents": 100, "reason": "late"},
            },
            watch("s1", PROCESSING_ORDER, ["shipped"], every_s=1, timeout_s=600),
        ]
    }
    stack = await make_stack(policy=RefundAndWatch([plan]))
    # The request names the refund's order and amount: a side effect acts on the user's words.
    handle = await stack.start(
        f"refund $1.00 on order {refundable} and watch order {PROCESSING_ORDER}",
        options={"watch_every_s": 1, "continue_after_runs": 2},
    )
    deadline = time.monotonic() + 30
    continued = 0
    while time.monotonic() < deadline and continued < 2:
        await asyncio.sleep(0.5)
        try:
            progress = await handle.query(names.PROGRESS_QUERY, result_type=RunProgress)
        except Exception:  # between two runs of the chain
            continue
        continued = progress.continued
    assert continued >= 2
    await ship_order(orders_db, PROCESSING_ORDER)
    result: AgentResult = await asyncio.wait_for(handle.result(), timeout=20)
    refund, order = result.steps
    assert refund.status is StepStatus.SUCCEEDED and order.status is StepStatus.SUCCEEDED
    assert order.runs >= 5 and order.output["status"] == "shipped"
    assert result.run_id != handle.first_execution_run_id or result.run_id != handle.run_id
    rows = await orders_db.fetch("SELECT refund_id FROM refunds WHERE order_id = $1", refundable)
    assert len(rows) == 1, "the refund was made again by a continued run"
    assert result.timings_ms.total >= 4000  # the chain's whole time, not the last run's


async def test_a_client_cannot_start_a_run_with_a_forged_continuation(
    make_stack: StackFactory,
) -> None:
    stack = await make_stack()
    forged = {
        "from_run_id": "whatever",
        "started_at": "2026-12-01T09:00:00Z",
        "route": {"intent": "refund", "confidence": 1.0, "tier": "rules"},
        "plan": {"steps": [{"id": "s1", "tool": "search_kb", "args": {"query": "x"}}]},
        "steps": [],
        "allowed_effects": ["create_refund"],
    }
    handle = await stack.client.start_workflow(
        names.AGENT_WORKFLOW,
        args=[{"question": "hi"}, forged],
        id=f"forged-{time.monotonic_ns()}",
        task_queue=stack.task_queue,
    )
    with pytest.raises(WorkflowFailureError) as failed:
        await asyncio.wait_for(handle.result(), timeout=20)
    cause = failed.value.cause
    assert isinstance(cause, ApplicationError) and cause.type == errors.INVALID_REQUEST
    assert "one input" in cause.message


async def test_a_watch_that_fired_after_continuing_streams_its_answer_to_the_client(
    make_stack: StackFactory, orders_db: asyncpg.Pool, redis_url: str
) -> None:
    stack = await make_stack()
    client = stack.agent_client(redis_url=redis_url)
    events: list[TokenEvent] = []
    workflow_id = f"watch-{time.monotonic_ns()}"
    request = AgentRequest(
        question=f"Tell me when order {PROCESSING_ORDER} ships",
        tenant=stack.tenant,
        options=RunOptions(watch_every_s=1, continue_after_runs=1),
    )
    asked = asyncio.ensure_future(
        client.ask_streaming(request, on_event=events.append, workflow_id=workflow_id)
    )
    try:
        for _ in range(60):  # until the chain has continued as new
            await asyncio.sleep(0.5)
            try:
                if (await client.progress(workflow_id)).continued >= 1:
                    break
            except Exception:  # between two runs of the chain
                continue
        await ship_order(orders_db, PROCESSING_ORDER)
        result = await asyncio.wait_for(asked, timeout=20)
    finally:
        await client.close()
    streamed = "".join(e.text for e in events if e.type is TokenEventType.TOKEN)
    assert streamed == result.answer and "is shipped" in streamed
    history = await stack.client.get_workflow_handle(
        workflow_id, run_id=result.run_id
    ).fetch_history()
    started = history.events[0].workflow_execution_started_event_attributes
    assert started.continued_execution_run_id  # the answer came from a continued run
    # Announced on the key of the run the caller started too (the chain's first run's).
    redis = aioredis.from_url(redis_url)
    try:
        key = answer_key(workflow_id, started.first_execution_run_id)
        entries = await redis.xrange(key)
    finally:
        await redis.aclose()
    assert entries is not None
    [(_, fields)] = entries
    assert fields is not None
    announced = AgentResult.model_validate_json(fields[ANSWER_FIELD.encode()])
    assert (announced.run_id, announced.answer) == (result.run_id, result.answer)
