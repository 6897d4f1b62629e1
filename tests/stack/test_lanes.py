"""Lanes on a real dev server: queued interactive runs are served before queued background
runs, and a tenant flooding the queue does not hold back another tenant's runs.

Runs are queued before any worker polls their task queue; then the workers start, with
one model call at a time on the inference queue (a fake model that takes 40 ms a call),
so every run's model calls wait in one backlog and the order they are served in decides
the order runs finish. The model activities are scheduled by the LangGraph plugin with no
priority of their own: that they follow the run's lane shows Temporal's inheritance.
"""

from __future__ import annotations

import asyncio
from typing import Any

from temporalio.client import Client, WorkflowHandle

from agentkeel.client.agent_client import AgentClient
from agentkeel.examples.shop.rules.policy import RulesPolicy
from agentkeel.schemas.lanes import Lane
from agentkeel.schemas.model_calls import RouteInput, RouteResult
from agentkeel.schemas.request import AgentRequest, RunOptions
from agentkeel.schemas.result import AgentResult
from tests.support.agent_stack import StackFactory, new_task_queue, tenant_of

BACKGROUND_RUNS = 10
INTERACTIVE_RUNS = 3


class FakeSlowModelPolicy(RulesPolicy):
    """The rules policy behind a model whose route call takes `delay_s`."""

    name = "fake-slow-model"

    def __init__(self, delay_s: float = 0.04) -> None:
        super().__init__()
        self.delay_s = delay_s

    async def route(self, request: RouteInput) -> RouteResult:
        await asyncio.sleep(self.delay_s)
        return await super().route(request)


def _request(i: int, tenant: str) -> AgentRequest:
    # No cache: a run answered from an earlier one's entry would skip the backlog.
    return AgentRequest(
        question=f"Where is order {1001 + i}?", tenant=tenant, options=RunOptions(use_cache=False)
    )


async def _finish_order(
    client: Client, handles: list[WorkflowHandle[Any, AgentResult]]
) -> list[str]:
    """Workflow ids in the order their runs closed."""
    await asyncio.wait_for(asyncio.gather(*(h.result() for h in handles)), timeout=120)
    closed = []
    for handle in handles:
        described = await client.get_workflow_handle(handle.id).describe()
        assert described.close_time is not None
        closed.append((described.close_time, handle.id))
    return [workflow_id for _, workflow_id in sorted(closed)]


async def _queue_then_serve(client: Client, make_stack: StackFactory) -> tuple[list[str], set[str]]:
    """Queue background runs, then interactive ones, then start the workers: the ids in
    finishing order, and the interactive runs' ids."""
    queue = new_task_queue()
    agents = AgentClient(client, task_queue=queue, version="lanes-test")
    tenant = tenant_of(queue)
    handles = [
        await agents.start(_request(i, tenant), coalesce=False, lane=Lane.WARMING)
        for i in range(BACKGROUND_RUNS)
    ]
    interactive = [
        await agents.start(_request(i, tenant), coalesce=False, lane=Lane.INTERACTIVE)
        for i in range(INTERACTIVE_RUNS)
    ]
    await make_stack(task_queue=queue, policy=FakeSlowModelPolicy(), inference_concurrency=1)
    order = await _finish_order(client, [*handles, *interactive])
    return order, {h.id for h in interactive}


async def test_queued_interactive_runs_finish_before_queued_background_runs(
    client: Client, make_stack: StackFactory
) -> None:
    order, interactive = await _queue_then_serve(client, make_stack)
    places = sorted(order.index(workflow_id) for workflow_id in interactive)
    # Queued last, served first: every interactive run is among the first few to finish
    # (a background run's call already taken when an interactive one queues finishes first).
    # With `lanes=False` the same runs finished at places [4, 8, 9] and [8, 9, 11] here:
    # the CPU worker takes all first workflow tasks at once, so arrival order on the
    # inference queue is a race, and only a lane puts the interactive calls first.
    assert places[-1] < INTERACTIVE_RUNS + 2, places


async def test_a_flooding_tenant_does_not_hold_back_another_tenants_runs(
    client: Client, make_stack: StackFactory
) -> None:
    queue = new_task_queue()
    agents = AgentClient(client, task_queue=queue, version="lanes-test")
    flood = [
        await agents.start(_request(i, "tenant-flood"), coalesce=False)
        for i in range(BACKGROUND_RUNS)
    ]
    other = [
        await agents.start(_request(i, tenant_of(queue)), coalesce=False)
        for i in range(INTERACTIVE_RUNS)
    ]
    await make_stack(task_queue=queue, policy=FakeSlowModelPolicy(), inference_concurrency=1)
    order = await _finish_order(client, [*flood, *other])
    places = sorted(order.index(h.id) for h in other)
    # Same lane, fair shares: the other tenant's runs are served alongside the flood's
    # first runs, not after all of them (arrival order would put them last).
    assert places[-1] < 2 * INTERACTIVE_RUNS + 2, places
