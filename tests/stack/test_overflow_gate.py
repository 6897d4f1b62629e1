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
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
import redis.asyncio as aioredis
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, WorkflowFailureError, WorkflowHandle

from agentkeel.activities import overflow_slots
from agentkeel.activities.overflow_slots import OverflowSlots, overflow_keys
from agentkeel.client.agent_client import AgentClient
from agentkeel.examples.shop.rules.policy import RulesPolicy
from agentkeel.schemas.lanes import Lane, OverflowSlotAsk, OverflowSlotGrant
from agentkeel.schemas.model_calls import RouteInput, RouteResult
from agentkeel.schemas.names import OVERFLOW_SLOT_SIGNAL
from agentkeel.schemas.request import AgentRequest, RunOptions
from agentkeel.schemas.result import AgentResult
from agentkeel.settings.connections import redis_client
from agentkeel.workflows.overflow_gate import OVERFLOW_GATE_PATCH
from tests.stack.test_record_histories import RECORD, _save
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


async def _until(found: Callable[[], Awaitable[Any]]) -> None:
    async with asyncio.timeout(30):
        for _ in itertools.count():
            if await found():
                return
            await asyncio.sleep(0.05)


async def _until_queued(handle: WorkflowHandle[Any, AgentResult]) -> None:
    async def queued() -> bool:
        return bool((await handle.query("progress"))["stage"] == "queued")

    await _until(queued)


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
    redis = redis_client(redis_url)
    try:
        for key in overflow_keys(stack.task_queue):  # every slot and place given back
            assert await redis.zcard(key) == 0, key
    finally:
        await redis.aclose()


async def test_waiters_cancelled_or_terminated_in_the_queue_hold_no_one_back(
    client: Client, make_stack: StackFactory, redis_url: str
) -> None:
    stack = await make_stack(policy=CountingModelPolicy(), overflow_runs_in_flight=1)
    agents = AgentClient(client, task_queue=stack.task_queue, version="overflow-test")
    held, waiting, _ = overflow_keys(stack.task_queue)
    redis = redis_client(redis_url)
    try:
        (first,) = await _start(agents, "overflow", 1, stack.tenant, Lane.OVERFLOW)
        await _until(lambda: redis.zscore(held, first.id))  # it holds the slot, before:
        cancelled, doomed, last = await _start(agents, "overflow", 3, stack.tenant, Lane.OVERFLOW)
        for handle in (cancelled, doomed, last):
            await _until_queued(handle)
        await cancelled.cancel()
        with pytest.raises(WorkflowFailureError):
            await asyncio.wait_for(cancelled.result(), timeout=30)
        # A cancelled waiter leaves the queue as its run ends.
        assert await redis.zscore(waiting, cancelled.id) is None
        await doomed.terminate("test: gone while it waited")
        await asyncio.wait_for(first.result(), timeout=30)
        done = time.monotonic()
        await asyncio.wait_for(last.result(), timeout=30)
    finally:
        await redis.aclose()
    # Handed on past the terminated run at once, not after its slot's lease
    # (`SLOT_LEASE_S`), and before the last run's own next look (doubling from 2 s).
    assert time.monotonic() - done < 4 * ROUTE_S + 2, time.monotonic() - done


async def test_the_slots_are_handed_out_in_the_order_runs_asked(
    redis_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    queue = new_task_queue()
    redis: aioredis.Redis = redis_client(redis_url)
    slots = OverflowSlots(redis, queue, cap=2)

    async def ask(run: str) -> OverflowSlotGrant:
        return await slots.take_overflow_slot(OverflowSlotAsk(workflow_id=run))

    async def give_back(run: str) -> list[str]:
        return await slots.give_back_overflow_slot(OverflowSlotAsk(workflow_id=run))

    try:
        assert [(await ask(w)).go_on for w in "abcd"] == [True, True, False, False]
        # Asking again keeps a waiter's place; a slot goes to the oldest waiter.
        assert not (await ask("d")).go_on
        assert await give_back("a") == ["c"]
        assert (await ask("c")).held
        assert not (await ask("d")).go_on
        assert not (await ask("e")).go_on
        assert await give_back("e") == []  # a waiter that gives up leaves the queue
        assert await give_back("b") == ["d"]
        assert await give_back("c") == [] and await give_back("d") == []
        # A waiter that stopped asking (terminated) is passed over when a slot frees.
        monkeypatch.setattr(overflow_slots, "WAITER_STALE_S", 0.2)
        assert [(await ask(w)).go_on for w in ("f", "g", "h", "i")] == [True, True, False, False]
        await asyncio.sleep(0.3)
        assert not (await ask("i")).go_on  # seen again; "h" is not
        assert await give_back("f") == ["i"]
        uncapped = OverflowSlots(redis, queue, cap=0)
        grant = await uncapped.take_overflow_slot(OverflowSlotAsk(workflow_id=uuid.uuid4().hex))
        assert grant.go_on and not grant.held
    finally:
        await redis.delete(*overflow_keys(queue))
        await redis.aclose()


@pytest.mark.skipif(not RECORD, reason="set AGENTKEEL_RECORD_HISTORIES=1 to re-record")
async def test_record_overflow_gate_histories(make_stack: StackFactory) -> None:
    """Two overflow runs under a cap of one: the first takes the slot, gives it back and
    wakes the second, which waited for it (`overflow-gate-v1`)."""
    stack = await make_stack(policy=CountingModelPolicy(), overflow_runs_in_flight=1)
    agents = AgentClient(stack.client, task_queue=stack.task_queue, version="record")
    handles = [
        await agents.start(
            _request("overflow", i, stack.tenant), coalesce=False, lane=Lane.OVERFLOW
        )
        for i in range(2)
    ]
    for handle in handles:
        await handle.result()
    for name, handle in zip(("overflow_held", "overflow_waited"), handles, strict=True):
        await _save(name, await handle.fetch_history(), OVERFLOW_GATE_PATCH)
