"""Reads start as the planner writes them, on the real stack (dev server, Postgres, Redis;
only the models are scripted: a heavy `FakeEngine` that streams its plan over a while).

The planner's first decode is rejected (it names a step that does not exist) and decoded
again: the read only the rejected plan made is cancelled and never a step of the run, the
read both made starts once, before the plan activity ends, and the final plan adopts it,
as it adopts a read that reads it (started once the first returned, resolved). A chain
of reads, each reading the one before, starts link by link while the plan is written.
A side effect signalled as a plan step never starts. A plan attempt that dies mid-stream
(its model server gone) and is retried starts the read it had sent once. The planner
runs after the route (`plan_ahead="off"`), in a plan activity of its own, which the tests
read in the history."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from typing import Any

from temporalio.api.enums.v1 import EventType
from temporalio.client import WorkflowHandle, WorkflowHistory

from agentkeel.inference.engines.protocol import (
    EngineUnavailableError,
    GenerateRequest,
    TokenDelta,
)
from agentkeel.inference.llm.cascade import CascadePolicy
from agentkeel.inference.llm.policy import LlmPolicy
from agentkeel.schemas.names import PLAN, PLAN_STEP_SIGNAL, ROUTE
from agentkeel.schemas.route import Tier
from agentkeel.schemas.speculation import SpeculationOutcome
from tests.support.agent_stack import StackFactory
from tests.support.fakes import FakeEngine
from tests.support.speculation import FINAL, ORDER, UNSURE, StandInOrders, streaming_cascade


def _question() -> str:
    # Names no entity (nothing predicted, so every read here came from the plan's stream).
    letters = "".join(chr(ord("a") + int(c, 16) % 26) for c in uuid.uuid4().hex[:8])
    return f"my parcel has not come, what now ({letters})"


async def _when_planning(handle: WorkflowHandle[Any, Any]) -> None:
    for _ in range(200):
        if PLAN in _scheduled(await handle.fetch_history()):
            return
        await asyncio.sleep(0.05)
    raise AssertionError("the plan activity was never scheduled")


def _scheduled(history: WorkflowHistory) -> dict[str, list[int]]:
    """Activity type -> the event ids of its ActivityTaskScheduled events."""
    out: dict[str, list[int]] = {}
    for e in history.events:
        if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
            name = e.activity_task_scheduled_event_attributes.activity_type.name
            out.setdefault(name, []).append(e.event_id)
    return out


def _completed(history: WorkflowHistory, scheduled_id: int) -> int:
    for e in history.events:
        if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
            if e.activity_task_completed_event_attributes.scheduled_event_id == scheduled_id:
                return e.event_id
    raise AssertionError(f"activity {scheduled_id} never completed")


async def test_reads_start_as_the_plan_streams_and_the_final_plan_decides(
    make_stack: StackFactory,
) -> None:
    orders = StandInOrders(hold_s=0.05)
    stack = await make_stack(
        plan_ahead="off", policy=streaming_cascade(), replace_activities=[orders.get_order]
    )
    handle = await stack.start(_question(), options={"use_cache": False})
    await _when_planning(handle)
    # Model output is untrusted: a side effect signalled as a plan step, and a read signalled
    # twice more (as a retried activity would), change nothing.
    refund = {"tool": "create_refund", "args": {"order_id": 1001, "amount_cents": 100}}
    for call in (refund, ORDER, ORDER):
        await handle.signal(PLAN_STEP_SIGNAL, {"calls": [{k: call[k] for k in ("tool", "args")}]})
    result = await handle.result()
    history = await handle.fetch_history()
    scheduled = _scheduled(history)

    [plan_id] = scheduled[PLAN]
    plan_done = _completed(history, plan_id)
    # The read both plans make started once, while the planner was still writing.
    assert len(scheduled["get_order"]) == 1 and orders.calls == 1
    assert scheduled["get_order"][0] < plan_done
    # The read only the rejected plan made started early too, and was dropped: not a step.
    # The final plan's second step reads the first: it ran once, early (once the first
    # returned, if the plan was still decoding then) or as the plan's step.
    assert len(scheduled["search_kb"]) == 2
    assert scheduled["search_kb"][0] < plan_done
    assert "create_refund" not in scheduled
    assert [s.tool for s in result.steps] == ["get_order", "search_kb"]
    assert result.steps[0].speculative and result.steps[1].args == {"query": "shipped"}
    assert result.speculation is not None
    outcomes = [(c.tool, c.outcome) for c in result.speculation.calls]
    assert ("get_order", SpeculationOutcome.USED) in outcomes
    assert ("search_kb", SpeculationOutcome.UNUSED) in outcomes  # the rejected plan's read
    signals = [
        e
        for e in history.events
        if e.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED
        and e.workflow_execution_signaled_event_attributes.signal_name == PLAN_STEP_SIGNAL
    ]
    assert len(signals) >= 3 + 2  # ours, and the rejected decode's and the final one's


async def test_a_worker_with_streaming_off_plans_whole(make_stack: StackFactory) -> None:
    stack = await make_stack(plan_ahead="off", policy=streaming_cascade(), plan_stream="off")
    handle = await stack.start(_question(), options={"use_cache": False})
    result = await handle.result()
    history = await handle.fetch_history()
    scheduled = _scheduled(history)

    plan_done = _completed(history, scheduled[PLAN][0])
    before = [name for name, ids in scheduled.items() if name != PLAN and ids[0] < plan_done]
    assert before == [ROUTE]  # no tool started before the whole plan
    assert [s.tool for s in result.steps] == ["get_order", "search_kb"]
    assert result.speculation is None


class DiesMidPlan(FakeEngine):
    """A planner whose first streamed decode breaks off after its first step, as a model
    server (or an inference worker) dying mid-plan: the activity attempt fails, and the
    retry decodes the whole plan again."""

    def __init__(self) -> None:
        super().__init__("dies-mid-plan", documents=[FINAL], delay_s=0.3, streams_json=True)
        self.broke = False

    async def stream(self, request: GenerateRequest) -> AsyncIterator[TokenDelta]:
        text = ""
        async for delta in super().stream(request):
            text += delta.text
            yield delta
            if not self.broke and text.count("}") >= 2:  # s1's args and s1 itself closed
                self.broke = True
                await asyncio.sleep(0.2)  # its read signalled, the rest never comes
                raise EngineUnavailableError("model server went away mid-plan")


async def test_a_plan_attempt_that_dies_mid_stream_starts_its_read_once(
    make_stack: StackFactory,
) -> None:
    light = FakeEngine("light-fake", label_probs=UNSURE, documents=[FINAL])
    policy = CascadePolicy(
        LlmPolicy(light, tier=Tier.LIGHT), LlmPolicy(DiesMidPlan(), tier=Tier.HEAVY)
    )
    orders = StandInOrders(hold_s=0.05)
    stack = await make_stack(plan_ahead="off", policy=policy, replace_activities=[orders.get_order])
    handle = await stack.start(_question(), options={"use_cache": False})
    result = await handle.result()
    history = await handle.fetch_history()
    scheduled = _scheduled(history)

    attempts = [
        e.activity_task_started_event_attributes.attempt
        for e in history.events
        if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED
        and e.activity_task_started_event_attributes.scheduled_event_id == scheduled[PLAN][0]
    ]
    assert attempts == [2]  # (a started event records the last attempt only)
    signaled = EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED
    assert sum(1 for e in history.events if e.event_type == signaled) == 2  # one per attempt
    assert len(scheduled["get_order"]) == 1 and orders.calls == 1
    assert scheduled["get_order"][0] < _completed(history, scheduled[PLAN][0])
    assert len(scheduled.get("search_kb", [])) <= 1  # early, or as the plan's (local) step
    assert (result.steps[0].tool, result.steps[0].speculative) == ("get_order", True)


async def test_a_chain_of_reads_starts_link_by_link_while_the_plan_is_written(
    make_stack: StackFactory,
) -> None:
    steps = [
        {"id": "s1", "tool": "get_order", "args": {"order_id": 1001}},
        {"id": "s2", "tool": "check_inventory", "args": {"sku": "$s1.items.0.sku"}},
        {"id": "s3", "tool": "search_kb", "args": {"query": "$s2.product_name"}},
        {"id": "s4", "tool": "search_kb", "args": {"query": "$s9.status"}},  # waits: no s9
    ]
    answer = "Here is what we found for you today: {$s3.query}, in stock as of now."
    chain = {"intent": "order_status", "rationale": "a chain", "steps": steps[:3], "answer": answer}
    heavy = FakeEngine("heavy-fake", documents=[chain], delay_s=2.0, streams_json=True)
    light = FakeEngine("light-fake", label_probs=UNSURE, documents=[chain])
    policy = CascadePolicy(LlmPolicy(light, tier=Tier.LIGHT), LlmPolicy(heavy, tier=Tier.HEAVY))
    orders = StandInOrders(hold_s=0.05)
    stack = await make_stack(plan_ahead="off", policy=policy, replace_activities=[orders.get_order])
    handle = await stack.start(_question(), options={"use_cache": False})
    await _when_planning(handle)
    # A step reading a step nobody streamed is never taken, however it is signalled.
    stray = {k: steps[3][k] for k in ("tool", "args")}
    await handle.signal(PLAN_STEP_SIGNAL, {"calls": [{**stray, "step": "s4", "after": ["s9"]}]})
    result = await handle.result()
    history = await handle.fetch_history()
    scheduled = _scheduled(history)

    plan_done = _completed(history, scheduled[PLAN][0])
    # Each link started once its input returned, all before the plan was whole, in order.
    links = [scheduled[t][0] for t in ("get_order", "check_inventory", "search_kb")]
    assert links == sorted(links) and links[-1] < plan_done
    assert [len(scheduled[t]) for t in ("get_order", "check_inventory", "search_kb")] == [1, 1, 1]
    assert [(s.tool, s.speculative) for s in result.steps] == [
        ("get_order", True),
        ("check_inventory", True),
        ("search_kb", True),
    ]
    assert result.steps[1].args == {"sku": "SKU-00001"}


async def test_a_planner_given_the_started_read_streams_the_steps_after_it(
    make_stack: StackFactory,
) -> None:
    """The question names its order: that read starts at the run's first moment and the
    planner is given it as `p1` (`inference.llm.given_reads`); the steps it writes after
    it start while it still writes, the first once `p1` has returned."""
    after = [
        {"id": "s1", "tool": "check_inventory", "args": {"sku": "$p1.items.0.sku"}},
        {"id": "s2", "tool": "search_kb", "args": {"query": "$s1.product_name"}},
    ]
    plan = {"intent": "order_status", "rationale": "after p1", "steps": after}
    heavy = FakeEngine("heavy-fake", documents=[plan], delay_s=2.0, streams_json=True)
    light = FakeEngine("light-fake", label_probs=UNSURE, documents=[plan])
    policy = CascadePolicy(LlmPolicy(light, tier=Tier.LIGHT), LlmPolicy(heavy, tier=Tier.HEAVY))
    stack = await make_stack(plan_ahead="off", policy=policy)
    # The path cache is asked (it predicts the read) and misses: the question is new.
    handle = await stack.start(f"is order 1001 in stock? ({_question()})")
    result = await handle.result()
    history = await handle.fetch_history()
    scheduled = _scheduled(history)

    assert any('p1 {"get_order": {"order_id": 1001}}' in p for p in heavy.prompts)
    plan_done = _completed(history, scheduled[PLAN][0])
    assert [len(scheduled[t]) for t in ("get_order", "check_inventory", "search_kb")] == [1, 1, 1]
    assert scheduled["get_order"][0] < scheduled[PLAN][0]  # at once, before the planner
    assert scheduled["check_inventory"][0] < scheduled["search_kb"][0] < plan_done
    assert [(s.id, s.tool, s.speculative) for s in result.steps] == [
        ("p1", "get_order", True),
        ("s1", "check_inventory", True),
        ("s2", "search_kb", True),
    ]
