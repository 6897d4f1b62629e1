"""Recurring questions: `agentkeel schedule` makes ordinary Temporal Schedules of AgentWorkflow,
whose runs ask for their tenant and actor and make no side effect their schedule did not
allow."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Awaitable, Callable

import asyncpg
import pytest
from temporalio.client import Client, ScheduleActionExecutionStartWorkflow, ScheduleDescription

from agentkeel.client.schedule_timing import ScheduleError, Timing
from agentkeel.client.schedules import (
    WORKFLOW_ID_PREFIX,
    create_schedule,
    delete_schedule,
    derived_schedule_id,
    list_schedules,
    pause_schedule,
    scheduled_request,
)
from agentkeel.schemas.actor import SYSTEM_ACTOR, Actor
from agentkeel.schemas.lanes import LANE_PRIORITY_KEYS, Lane
from agentkeel.schemas.names import AGENT_WORKFLOW
from agentkeel.schemas.result import AgentResult
from tests.support.agent_stack import AgentStack
from tests.support.schedules import QUESTION, _exists
from tests.support.schedules import schedule_ids as schedule_ids

ANN = Actor(role="staff", name="ann")


async def _until(
    probe: Callable[[], Awaitable[ScheduleDescription]],
    ready: Callable[[ScheduleDescription], bool],
    *,
    timeout_s: float = 10,
) -> ScheduleDescription:
    deadline = time.monotonic() + timeout_s
    while True:
        found = await probe()
        if ready(found) or time.monotonic() > deadline:
            return found
        await asyncio.sleep(0.1)


async def test_a_schedule_runs_the_question_for_its_tenant_and_actor_until_paused(
    client: Client, stack: AgentStack, schedule_ids: list[str]
) -> None:
    request = scheduled_request(QUESTION, tenant=stack.tenant, actor=ANN)
    schedule_id = await create_schedule(
        client, request, Timing.parse(every="1s"), task_queue=stack.task_queue
    )
    schedule_ids.append(schedule_id)
    assert schedule_id == derived_schedule_id(request)
    assert schedule_id.startswith("where-is-order-1001-")
    handle = client.get_schedule_handle(schedule_id)

    fired = await _until(handle.describe, lambda d: bool(d.info.recent_actions))
    first = fired.info.recent_actions[0].action
    assert isinstance(first, ScheduleActionExecutionStartWorkflow)
    assert first.workflow_id.startswith(f"{WORKFLOW_ID_PREFIX}{schedule_id}-")
    run = client.get_workflow_handle(first.workflow_id, result_type=AgentResult)
    result = await asyncio.wait_for(run.result(), timeout=15)
    assert "1001" in result.answer

    history = await run.fetch_history()
    started = history.events[0].workflow_execution_started_event_attributes
    assert started.workflow_type.name == AGENT_WORKFLOW
    [given] = await client.data_converter.decode(started.input.payloads)
    assert given["question"] == QUESTION
    assert given["tenant"] == stack.tenant
    assert Actor.model_validate(given["actor"]) == ANN
    # A scheduled question's lane: behind interactive runs, its tenant's share of the queue.
    assert started.priority.priority_key == LANE_PRIORITY_KEYS[Lane.AUTOMATION]
    assert started.priority.fairness_key == stack.tenant

    [listed] = [s for s in await list_schedules(client) if s.id == schedule_id]
    assert (listed.paused, listed.every, listed.question) == (False, "1s", QUESTION)
    assert (listed.tenant, listed.actor) == (stack.tenant, ANN)
    assert listed.next_run is not None

    await pause_schedule(client, schedule_id, "quiet, please")
    paused = await _until(handle.describe, lambda d: d.schedule.state.paused)
    assert paused.schedule.state.paused
    assert paused.schedule.state.note == "quiet, please"
    [listed] = [s for s in await list_schedules(client) if s.id == schedule_id]
    assert listed.paused and listed.next_run is None
    await asyncio.sleep(2.2)  # two due times pass
    assert (await handle.describe()).info.num_actions == paused.info.num_actions
    for going in paused.info.running_actions:  # started before the pause: they finish
        assert isinstance(going, ScheduleActionExecutionStartWorkflow)
        await asyncio.wait_for(client.get_workflow_handle(going.workflow_id).result(), 15)

    await delete_schedule(client, schedule_id)
    assert not await _exists(client, schedule_id)
    assert schedule_id not in {s.id for s in await list_schedules(client)}
    with pytest.raises(ScheduleError, match="no schedule"):
        await delete_schedule(client, schedule_id)


async def test_a_bad_request_or_cron_creates_nothing(client: Client) -> None:
    with pytest.raises(ScheduleError, match="question"):
        scheduled_request("   ", tenant="default", actor=SYSTEM_ACTOR)
    with pytest.raises(ScheduleError, match="tenant"):
        scheduled_request(QUESTION, tenant="no spaces allowed", actor=SYSTEM_ACTOR)

    request = scheduled_request(QUESTION, tenant=f"t{uuid.uuid4().hex[:8]}", actor=ANN)
    with pytest.raises(ScheduleError, match=r"--cron '61 \* \* \* \*' is not valid: Minute"):
        await create_schedule(client, request, Timing.parse(cron="61 * * * *"), task_queue="q")
    with pytest.raises(ScheduleError, match="schedule id"):
        await create_schedule(
            client, request, Timing.parse(every="1h"), task_queue="q", schedule_id="a b"
        )
    assert not await _exists(client, derived_schedule_id(request))


async def _first_run_of(client: Client, schedule_id: str) -> AgentResult:
    handle = client.get_schedule_handle(schedule_id)
    fired = await _until(handle.describe, lambda d: bool(d.info.recent_actions))
    first = fired.info.recent_actions[0].action
    assert isinstance(first, ScheduleActionExecutionStartWorkflow)
    await handle.pause(note="one run is enough")
    run = client.get_workflow_handle(first.workflow_id, result_type=AgentResult)
    return await asyncio.wait_for(run.result(), timeout=30)


async def test_a_scheduled_run_makes_no_side_effect_unless_its_schedule_allowed_it(
    client: Client, stack: AgentStack, schedule_ids: list[str], orders_db: asyncpg.Pool
) -> None:
    # Delivered: the rules policy plans a refund for a delivered order only.
    order_id = await orders_db.fetchval(
        "SELECT o.order_id FROM orders o WHERE o.status = 'delivered' AND o.total_cents - "
        "(SELECT coalesce(sum(amount_cents), 0) FROM refunds r WHERE r.order_id = o.order_id)"
        " >= 500 ORDER BY o.order_id LIMIT 1"
    )
    assert order_id is not None
    question = f"Please refund $1.00 for order {order_id}, it arrived damaged"
    every = Timing.parse(every="1s")
    read_only = scheduled_request(question, tenant=stack.tenant, actor=ANN)
    schedule_ids.append(
        await create_schedule(client, read_only, every, task_queue=stack.task_queue)
    )
    refused = await _first_run_of(client, schedule_ids[-1])
    # (The run answers what it can read; the same request, allowed below, refunds.)
    assert not any(s.tool == "create_refund" and s.output for s in refused.steps)

    with pytest.raises(ScheduleError, match="may not let a schedule make side effects"):
        scheduled_request(
            question,
            tenant=stack.tenant,
            actor=Actor(role="customer", subject="1"),
            effects=True,
        )
    allowed = scheduled_request(question, tenant=stack.tenant, actor=ANN, effects=True)
    allowed = allowed.model_copy(update={"question": question + " please"})  # another id
    schedule_ids.append(await create_schedule(client, allowed, every, task_queue=stack.task_queue))
    made = await _first_run_of(client, schedule_ids[-1])
    [refund] = [s for s in made.steps if s.tool == "create_refund"]
    assert refund.output is not None and refund.output["created"] is True
