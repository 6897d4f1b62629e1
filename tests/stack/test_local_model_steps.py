"""`AGENTKEEL_LOCAL_POLICY=on`: the CPU worker makes the model calls itself, as local
activities, on the real stack.

The models are the token-timed OpenAI-compatible server (`bench.token_server`, a fake at
the model boundary) reached through agentkeel's real engine and LLM cascade, built by the
CPU worker from its own settings. The inference worker beside it serves the rules, so a
step that reached it would answer differently (and be scheduled in history).
"""

from __future__ import annotations

import asyncio
from typing import Any

from temporalio.api.enums.v1 import EventType

from agentkeel.schemas import names
from agentkeel.schemas.result import StepStatus
from agentkeel.schemas.speculation import SpeculationOutcome
from bench.peer_agentkeel import tier
from bench.token_server import Speed, serving
from tests.support.agent_stack import AgentStack, StackFactory
from tests.support.history import scheduled_activities
from tests.support.shop_model import ORDER_QUESTION, ShopOrderModel
from tests.support.speculation import KB_ONLY, STEPS, StandInOrders, confident

NO_CACHE = {"use_cache": False}


async def _twins_here(
    make_stack: StackFactory,
    orders: StandInOrders,
    steps: list[dict[str, Any]],
    *,
    delay_s: float,
) -> AgentStack:
    """A stack whose CPU worker serves a confident route planning `steps` (taking
    `delay_s`) and runs the reads, `get_order` being `orders`' stand-in."""
    return await make_stack(
        policy=confident(steps, delay_s=delay_s),
        policy_here=True,
        replace_activities=[orders.get_order],
    )


WRITING = Speed("writing", 0.0, 0.004)
"""4 ms a token: a plan takes longer than the early-read hold, so a planner on the inference
pool would stream it and signal its first read before the plan is whole."""


async def test_model_steps_run_on_the_cpu_worker_with_no_task_queue_hop(
    make_stack: StackFactory,
) -> None:
    async with serving(ShopOrderModel(route_confidence=0.5), WRITING) as (url, server):
        stack = await make_stack(local_policy="on", light=tier(url), heavy=tier(url))
        handle = await stack.start(ORDER_QUESTION, options=NO_CACHE)
        result = await handle.result()
        history = await handle.fetch_history()
        served = server.log.requests

    # The cascade's own path, answered from the model server: an unsure route, the heavy
    # tier's plan (beside the router) and its answer; no rules policy wrote any of it.
    assert served == 3
    assert result.usage is not None and result.usage.calls == 3
    assert [(s.tool, s.status) for s in result.steps] == [
        ("get_order", StepStatus.SUCCEEDED),
        ("track_shipment", StepStatus.SUCCEEDED),
    ]
    assert result.steps[1].args == {"tracking_number": result.steps[0].output["tracking_number"]}
    assert result.answer
    # Every policy step a local activity of the CPU worker: none scheduled on any queue.
    queued = [
        e.activity_task_scheduled_event_attributes.activity_type.name
        for e in history.events
        if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
    ]
    assert not set(queued) & set(names.LOCAL_POLICY_STEPS), queued
    steps = [s for s in scheduled_activities(history) if s in names.LOCAL_POLICY_STEPS]
    assert steps == [names.ROUTE, names.RESPOND]
    # No early reads signalled from inside a local activity (they could only arrive after
    # it, as stale duplicates of the plan's own steps).
    assert not any(
        e.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED for e in history.events
    )


async def test_a_cpu_worker_without_the_setting_sends_model_steps_to_the_pool(
    make_stack: StackFactory,
) -> None:
    """The default (`auto`) with a model configured: the inference pool serves each step
    (here the stack's rules, which call no model)."""
    async with serving(ShopOrderModel(route_confidence=0.5), Speed("test", 0.0, 0.0)) as (
        url,
        server,
    ):
        stack = await make_stack(light=tier(url), heavy=tier(url))
        handle = await stack.start(ORDER_QUESTION, options=NO_CACHE)
        await handle.result()
        history = await handle.fetch_history()
        served = server.log.requests

    assert served == 0
    queued = [
        e.activity_task_scheduled_event_attributes.activity_type.name
        for e in history.events
        if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
    ]
    assert names.ROUTE in queued


async def test_reads_the_question_names_start_beside_a_local_model_step(
    make_stack: StackFactory,
) -> None:
    """With the policy's steps on the CPU worker (here a scripted confident route that takes
    200 ms) and the reads there too, the read the question names starts at the run's first
    moment as a local activity beside the route (`local-speculation-v1`): it is done before
    the route is, and its result serves the plan's step. The whole run is one workflow
    task: no task-queue activity at all."""
    stack = await make_stack(policy=confident(STEPS[:1], delay_s=0.2), policy_here=True)
    handle = await stack.start("where is order 1001?")
    result = await handle.result()
    history = await handle.fetch_history()

    assert [(s.tool, s.status, s.speculative) for s in result.steps] == [
        ("get_order", StepStatus.SUCCEEDED, True)
    ]
    assert result.speculation is not None
    assert [c.outcome.value for c in result.speculation.calls] == ["used"]
    assert not [
        e for e in history.events if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
    ]
    # Local activities are recorded as they finish: the read before the route's step.
    assert scheduled_activities(history)[:2] == ["get_order", names.ROUTE]
    completed = EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED
    assert sum(e.event_type == completed for e in history.events) == 1


async def test_a_local_twin_that_failed_for_good_is_its_steps_failure(
    make_stack: StackFactory,
) -> None:
    """A local twin's non-retryable failure is the step's, as a task-queue twin's is: the
    same call would fail again, so the step does not make it."""
    orders = StandInOrders(failing=1)
    stack = await _twins_here(make_stack, orders, STEPS[:1], delay_s=0.1)
    result = await stack.ask("where is order 1001? (failed for good)")

    assert orders.calls == 1, "the speculative call only"
    [step] = result.steps
    assert step.status is StepStatus.FAILED
    assert step.error is not None and step.error.type == "Unavailable", step.error
    assert result.speculation is not None
    assert [c.outcome for c in result.speculation.calls] == [SpeculationOutcome.FAILED]


async def test_a_local_twin_is_tried_once_and_a_flaky_failure_left_to_its_step(
    make_stack: StackFactory,
) -> None:
    """A local twin holds its workflow task while it runs, so it is tried once: a failure
    that a retry may cure leaves the call to its step, retried as the tool says."""
    orders = StandInOrders(failing=1, final=False)
    stack = await _twins_here(make_stack, orders, STEPS[:1], delay_s=0.1)
    result = await stack.ask("where is order 1001? (flaky)")

    assert orders.calls == 2, "the twin's one attempt, then the step's own call"
    [step] = result.steps
    assert step.status is StepStatus.SUCCEEDED and not step.speculative
    assert result.speculation is not None
    assert [c.outcome for c in result.speculation.calls] == [SpeculationOutcome.FAILED]


async def test_a_slow_local_twin_the_plan_does_not_make_is_cancelled_when_it_arrives(
    make_stack: StackFactory,
) -> None:
    orders = StandInOrders(hold_s=5.0)
    stack = await _twins_here(make_stack, orders, KB_ONLY, delay_s=0.2)
    result = await stack.ask("where is order 1001? (not needed)")

    assert result.speculation is not None
    [call] = result.speculation.calls
    assert call.outcome is SpeculationOutcome.UNUSED and call.cancelled
    assert result.timings_ms.total < 4000, "the run did not wait for the wasted read"
    for _ in range(50):
        if orders.cancelled:
            break
        await asyncio.sleep(0.1)
    assert orders.cancelled == 1
