"""Fewer sequential stages in real runs: an answer written with the plan, and a plan made
beside the router.

Both change how many model stages a run waits for, never what it does: the tests check
which activities a run's history holds and that the answer and steps are what they were.
"""

from __future__ import annotations

import json

from temporalio.client import WorkflowHistory

from agentkeel.schemas.result import StepStatus
from agentkeel.schemas.route import Tier
from agentkeel.schemas.tools import TOOLS
from tests.support.agent_stack import StackFactory
from tests.support.fakes import FakeScriptedPolicy
from tests.support.plans import ORDER_AND_TRACKING


def stages(history: WorkflowHistory) -> list[str]:
    """The activities the run waited for, in order: the model steps it sent to a queue and
    every tool call, on a queue or as a local activity (not a declined local offer)."""
    waited = []
    for e in history.events:
        if e.HasField("activity_task_scheduled_event_attributes"):
            waited.append(e.activity_task_scheduled_event_attributes.activity_type.name)
        elif e.HasField("marker_recorded_event_attributes"):
            details = e.marker_recorded_event_attributes.details
            if "data" in details:
                kind = json.loads(details["data"].payloads[0].data).get("activity_type")
                if kind in TOOLS:
                    waited.append(kind)
    return waited


async def test_an_answer_written_with_the_plan_needs_no_respond_call(
    make_stack: StackFactory,
) -> None:
    stack = await make_stack(policy=FakeScriptedPolicy([ORDER_AND_TRACKING]), plan_ahead="off")
    handle = await stack.start("Where is order 1001?")
    result = await handle.result()
    # The order the question names is read from the run's first moment (speculation),
    # beside the route; the plan's step takes that read.
    assert stages(await handle.fetch_history()) == [
        "get_order",
        "route",
        "plan",
        "track_shipment",
    ]
    order, parcel = result.steps[0].output, result.steps[1].output
    assert result.answer == (
        f"Order 1001 (${order['total_cents'] / 100:,.2f}) is {order['status']}; "
        f"its parcel is {parcel['status']}."
    )
    assert result.timings_ms.ttft == result.timings_ms.total  # it arrived whole


async def test_a_failed_step_is_explained_by_the_respond_step_not_the_template(
    make_stack: StackFactory,
) -> None:
    missing = {
        "steps": [{"id": "s1", "tool": "get_order", "args": {"order_id": 999999}}],
        "answer": "Order {$s1.order_id} is {$s1.status}.",
    }
    stack = await make_stack(policy=FakeScriptedPolicy([missing]), plan_ahead="off")
    handle = await stack.start("Where is order 999999?", options={"max_replans": 0})
    result = await handle.result()
    assert result.steps[0].status == StepStatus.FAILED
    assert stages(await handle.fetch_history())[-1] == "respond"
    assert "{$" not in result.answer and "999999" in result.answer


async def test_an_unsure_route_planned_beside_the_router_skips_the_plan_stage(
    make_stack: StackFactory,
) -> None:
    policy = FakeScriptedPolicy([ORDER_AND_TRACKING])
    stack = await make_stack(policy=policy, plan_ahead="always")
    handle = await stack.start("Where is order 1001?")
    result = await handle.result()
    assert stages(await handle.fetch_history()) == [
        "get_order",
        "route",
        "track_shipment",
    ]
    assert [s.status for s in result.steps] == [StepStatus.SUCCEEDED] * 2
    assert "Order 1001" in result.answer
    assert len(policy.plan_requests) == 1
    assert policy.plan_requests[0].route.tier == Tier.HEAVY  # it read the request itself
