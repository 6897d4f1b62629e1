"""Large outputs by reference: a fan-out over hundreds of orders runs in child workflows,
keeps every history small and the result complete, and fails its step by name when an
element fails."""

from __future__ import annotations

import asyncio
import json

import asyncpg

from agentkeel.schemas import errors
from agentkeel.schemas.result import AgentResult, StepStatus
from agentkeel.workflows.dag.fan_out import child_workflow_id
from tests.support.agent_stack import StackFactory
from tests.support.fakes import FakeScriptedPolicy
from tests.support.plans import every_order_plan, list_orders_of


async def test_a_400_order_fan_out_keeps_history_under_a_megabyte_and_the_result_complete(
    make_stack: StackFactory, orders_db: asyncpg.Pool
) -> None:
    order_ids = await orders_db.fetch("SELECT order_id FROM orders ORDER BY order_id LIMIT 400")
    assert len(order_ids) == 400
    stack = await make_stack(
        policy=FakeScriptedPolicy([every_order_plan()]),
        replace_activities=[list_orders_of([int(o["order_id"]) for o in order_ids])],
    )
    handle = await stack.start(
        "every order", options={"max_fan_out": 400, "max_tool_calls": 401, "max_concurrency": 32}
    )
    result: AgentResult = await asyncio.wait_for(handle.result(), timeout=240)
    fanned = result.steps[1]
    assert fanned.status is StepStatus.SUCCEEDED
    assert fanned.output is None and fanned.output_ref is not None
    assert fanned.output_ref.items == 400
    size = len((await handle.fetch_history()).to_json())
    children = [child_workflow_id(result.run_id, "s2", n) for n in range(4)]
    parts = [
        len((await stack.client.get_workflow_handle(child).fetch_history()).to_json())
        for child in children
    ]
    print(f"400-order fan-out: run history {size / 1e6:.2f} MB, parts {parts}")
    assert size < 1_000_000
    assert len(parts) == 4 and max(parts) < 1_000_000  # every history stays small
    complete = await stack.agent_client().resolve_outputs(result)
    orders = complete.steps[1].output
    assert [o["order_id"] for o in orders] == [o["order_id"] for o in order_ids]
    assert len(json.dumps(orders)) > 16_384


async def test_a_failing_element_of_a_fan_out_in_children_fails_its_step_by_name(
    make_stack: StackFactory, orders_db: asyncpg.Pool
) -> None:
    rows = await orders_db.fetch("SELECT order_id FROM orders ORDER BY order_id LIMIT 149")
    order_ids = [int(r["order_id"]) for r in rows]
    order_ids.insert(120, 99_999_999)  # no such order: NotFound, not retried
    stack = await make_stack(
        policy=FakeScriptedPolicy([every_order_plan()]),
        replace_activities=[list_orders_of(order_ids)],
    )
    result = await stack.ask(
        "every order", options={"max_fan_out": 150, "max_tool_calls": 151, "max_replans": 0}
    )
    fanned = result.steps[1]
    assert fanned.status is StepStatus.FAILED and fanned.output_ref is None
    assert fanned.error is not None and fanned.error.type == errors.NOT_FOUND
    assert fanned.error.message.startswith("s2[120]: ")
    assert result.steps[0].status is StepStatus.SUCCEEDED and result.answer
