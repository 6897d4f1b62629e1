"""The overflow lane's cap, on a real dev server and Redis: at most N overflow runs do
their work at once, the others wait in their workflows in the order they came and are
woken when a slot is handed to them; a waiter that was terminated hands its slot on;
interactive runs never wait at the gate.

The runs' model (a fake at the model boundary) takes 0.3 s a route and counts how many
routes of each lane are in flight at once: the work the cap bounds.
"""

from __future__ import annotations

import asyncio
import itertools
import time
import uuid
from typing import Any

import redis.asyncio as aioredis
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, WorkflowHandle

from agentkeel.activities.overflow_slots import OverflowSlots, overflow_keys
from agentkeel.client.agent_client import AgentClient
from agentkeel.examples.shop.rules.policy import RulesPolicy
from agentkeel.schemas.lanes import Lane, OverflowSlotAsk
from agentkeel.schemas.model_calls import RouteInput, RouteResult
from agentkeel.schemas.names import OVERFLOW_SLOT_SIGNAL
from agentkeel.schemas.request import AgentRequest, RunOptions
from agentkeel.schemas.result import AgentResult
from agentkeel.settings.connections import redis_client
from tests.support.agent_stack import StackFactory, new_task_queue

ROUTE_S = 0.3


class CountingModelPolicy(RulesPolicy):
    """The rules policy behind a model whose route takes `ROUTE_S`; the most routes in
    flight at once, by question prefix."""

    name = "fake-counting-model"

    def __init__(self) -> None:
        super().__init__()
        self.now: dict[str, int] = {}
        self.most: dict[str, int] = {}

    async def route(self, request: RouteInput) -> RouteResult:
        kind = request.question.split(":", 1)[0]
        self.now[kind] = self.now.get(kind, 0) + 1
        self.most[kind] = max(self.most.get(kind, 0), self.now[kind])
        try:
            await asyncio.sleep(ROUTE_S)
        finally:
            self.now[kind] -= 1
        return await super().route(request)


def _request(kind: str, i: int, tenant: str) -> AgentRequest:
    return AgentRequest(
        question=f"{kind}: where is order {1001 + i}?",
        tenant=tenant,
        options=RunOptions(use_cache=False),
    )


async def _start(
    agents: AgentClient, kind: str, n: int, tenant: str, lane: Lane
) -> list[WorkflowHandle[Any, AgentResult]]:
    return [
        await agents.start(_request(kind, i, tenant), coalesce=False, lane=lane) for i in range(n)
    ]


async def _signalled(client: Client, workflow_id: str) -> bool:
    async for event in client.get_workflow_handle(workflow_id).fetch_history_events():
        if event.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED:
            if event.workflow_execution_signaled_event_attributes.signal_name == (
                OVERFLOW_SLOT_SIGNAL
            ):
                return True
    return False


async def _until_queued(handle: WorkflowHandle[Any, AgentResult]) -> None:
    async with asyncio.timeout(30):
        for _ in itertools.count():
            if (await handle.query("progress"))["stage"] == "queued":
                return
            await asyncio.sleep(0.05)


async def test_overflow_runs_past_the_cap_wait_their_turn_and_interactive_runs_do_not(
    client: Client, make_stack: StackFactory, redis_url: str
) -> None:
    policy = CountingModelPolicy()
    stack = await make_stack(policy=policy, overflow_runs_in_flight=1, inference_concurrency=8)
    agents = AgentClient(client, task_queue=stack.task_queue, version="overflow-test")
    overflow = await _start(agents, "overflow", 4, stack.tenant, Lane.OVERFLOW)
    interactive = await _start(agents, "interactive", 3, stack.tenant, Lane.INTERACTIVE)
    results = await asyncio.wait_for(
        asyncio.gather(*(h.result() for h in [*overflow, *interactive])), timeout=90
    )
    assert all(r.answer for r in results)
    assert policy.most["overflow"] == 1, policy.most  # the cap: one at a time
    assert policy.most["interactive"] > 1, policy.most  # never held at the gate
    # The runs after the first were woken by the run before them handing its slot on.
    woken = [await _signalled(client, h.id) for h in overflow]
    assert sum(woken) >= len(overflow) - 1, woken
    held, waiting = overflow_keys(stack.task_queue)
    redis = redis_client(redis_url)
    try:
        assert await redis.zcard(held) == 0  # every slot given back
        assert await redis.zcard(waiting) == 0
    finally:
        await redis.aclose()


async def test_a_waiter_terminated_in_the_queue_hands_its_slot_on(
    client: Client, make_stack: StackFactory
) -> None:
    policy = CountingModelPolicy()
    stack = await make_stack(policy=policy, overflow_runs_in_flight=1)
    agents = AgentClient(client, task_queue=stack.task_queue, version="overflow-test")
    first, doomed, last = await _start(agents, "overflow", 3, stack.tenant, Lane.OVERFLOW)
    await _until_queued(doomed)
    await doomed.terminate("test: gone while it waited")
    await asyncio.wait_for(first.result(), timeout=30)
    done = time.monotonic()
    await asyncio.wait_for(last.result(), timeout=30)
    # Handed on at once, not after the terminated run's slot lease (`SLOT_LEASE_S`), and
    # before the last run's own next look (doubling from 2 s).
    assert time.monotonic() - done < 4 * ROUTE_S + 2, time.monotonic() - done


async def test_the_slots_are_handed_out_in_the_order_runs_asked(redis_url: str) -> None:
    queue = new_task_queue()
    redis: aioredis.Redis = redis_client(redis_url)
    slots = OverflowSlots(redis, queue, cap=2)
    try:
        asked = [await slots.take_overflow_slot(OverflowSlotAsk(workflow_id=w)) for w in "abcd"]
        assert [g.go_on for g in asked] == [True, True, False, False]
        # Asking again keeps a waiter's place; a slot goes to the oldest waiter.
        assert not (await slots.take_overflow_slot(OverflowSlotAsk(workflow_id="d"))).go_on
        woken = await slots.give_back_overflow_slot(OverflowSlotAsk(workflow_id="a"))
        assert woken == ["c"]
        assert (await slots.take_overflow_slot(OverflowSlotAsk(workflow_id="c"))).held
        assert not (await slots.take_overflow_slot(OverflowSlotAsk(workflow_id="d"))).go_on
        assert await slots.give_back_overflow_slot(OverflowSlotAsk(workflow_id="b")) == ["d"]
        assert await slots.give_back_overflow_slot(OverflowSlotAsk(workflow_id="c")) == []
        uncapped = OverflowSlots(redis, queue, cap=0)
        grant = await uncapped.take_overflow_slot(OverflowSlotAsk(workflow_id=uuid.uuid4().hex))
        assert grant.go_on and not grant.held
    finally:
        await redis.delete(*overflow_keys(queue))
        await redis.aclose()
