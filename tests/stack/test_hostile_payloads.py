"""Payloads the SDK cannot decode (an unknown encoding, bytes that are not JSON, JSON nested
past the decoder's limit) sent to runs, fan-out parts, signals and updates: each fails at once
naming what was wrong, and a waiting run keeps working.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from typing import Any

import asyncpg
import pytest
from temporalio.api.common.v1 import Payload
from temporalio.api.enums.v1 import EventType
from temporalio.client import (
    Client,
    WorkflowFailureError,
    WorkflowHandle,
    WorkflowUpdateFailedError,
)
from temporalio.common import RawValue
from temporalio.exceptions import ApplicationError

from agentkeel.schemas import errors, names
from agentkeel.schemas.approvals import ApprovalDecision
from agentkeel.schemas.progress import RunProgress
from tests.support.agent_stack import AgentStack
from tests.support.hostile import (
    OTHER_SHAPES,
    UNREADABLE,
    UNREADABLE_DEADLINE_S,
    assert_named,
    payload,
    running_on,
)
from tests.support.refunds import refundable_order, staff, until_awaiting


async def run_raw(
    client: Client, workflow: str, task_queue: str, payloads: list[Payload]
) -> tuple[str, Any]:
    """Start `workflow` with `payloads` as they are; ('failed', cause), ('completed', result)
    or, past `UNREADABLE_DEADLINE_S`, ('stuck', the pending workflow task) after
    terminating it."""
    handle = await client.start_workflow(
        workflow,
        args=[RawValue(p) for p in payloads],
        id=f"raw-{uuid.uuid4().hex[:12]}",
        task_queue=task_queue,
    )
    try:
        return "completed", await asyncio.wait_for(handle.result(), UNREADABLE_DEADLINE_S)
    except WorkflowFailureError as exc:
        return "failed", exc.cause
    except TimeoutError:
        pending = (await handle.describe()).raw_description.pending_workflow_task
        await handle.terminate("stuck on an unreadable payload")
        return "stuck", pending


async def test_an_unreadable_run_input_fails_the_run_at_once_naming_what_was_wrong(
    stack: AgentStack,
) -> None:
    cases = {name: [p] for name, (p, _) in UNREADABLE.items()}
    # As the second input, beside a good request: unreadable still, wherever it sits.
    cases["unreadable second input"] = [payload(b'{"question": "x"}'), UNREADABLE["empty"][0]]
    cases.update(OTHER_SHAPES)
    started = time.monotonic()
    outcomes = await asyncio.gather(
        *(
            run_raw(stack.client, names.AGENT_WORKFLOW, stack.task_queue, payloads)
            for payloads in cases.values()
        )
    )
    by_name = dict(zip(cases, outcomes, strict=True))
    for name, (_, words) in UNREADABLE.items():
        assert_named(by_name[name], errors.UNDECODABLE_PAYLOAD, words)
    assert_named(by_name["unreadable second input"], errors.UNDECODABLE_PAYLOAD, "Invalid JSON")
    for name in ("an array", "a string", "null", "nested 150 levels"):
        assert_named(by_name[name], errors.INVALID_REQUEST, "invalid AgentWorkflow input")
    assert_named(by_name["no input"], errors.INVALID_REQUEST, "got 0")
    assert_named(by_name["three inputs"], errors.INVALID_REQUEST, "got 3")
    assert time.monotonic() - started < UNREADABLE_DEADLINE_S
    assert await running_on(stack.client, stack.task_queue) == []


async def test_a_fan_out_part_started_with_any_unreadable_or_odd_input_fails_at_once(
    stack: AgentStack,
) -> None:
    cases = {name: [p] for name, (p, _) in UNREADABLE.items()}
    cases.update(OTHER_SHAPES)
    outcomes = await asyncio.gather(
        *(
            run_raw(stack.client, names.FAN_OUT_WORKFLOW, stack.task_queue, payloads)
            for payloads in cases.values()
        )
    )
    by_name = dict(zip(cases, outcomes, strict=True))
    for name, (_, words) in UNREADABLE.items():
        assert_named(by_name[name], errors.UNDECODABLE_PAYLOAD, words)
    for name in ("an array", "a string", "null", "nested 150 levels"):
        assert_named(by_name[name], errors.INVALID_REQUEST, f"invalid {names.FAN_OUT_WORKFLOW}")
    assert_named(by_name["no input"], errors.INVALID_REQUEST, "got 0")
    assert_named(by_name["three inputs"], errors.INVALID_REQUEST, "got 3")
    assert await running_on(stack.client, stack.task_queue) == []


async def workflow_task_failures(handle: WorkflowHandle[Any, Any]) -> list[str]:
    history = await handle.fetch_history()
    return [
        e.workflow_task_failed_event_attributes.failure.message
        for e in history.events
        if e.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED
    ]


async def test_hostile_signals_and_updates_leave_a_waiting_run_working(
    stack: AgentStack, database_url: str
) -> None:
    pool = await asyncpg.create_pool(database_url, min_size=1, max_size=2)
    try:
        order_id, _ = await refundable_order(pool, at_least_cents=15_000)
    finally:
        await pool.close()
    handle = await stack.start(
        f"Please refund $150.00 for order {order_id}, it arrived damaged", actor=staff()
    )
    await until_awaiting(handle)

    # Signals cannot answer: each one is dropped (with a warning) and the run goes on.
    hostile = [[p] for p, _ in UNREADABLE.values()] + list(OTHER_SHAPES.values())
    hostile.append([payload(b'{"call_id": 5, "downstream": [], "waiting": "maybe"}')])
    huge = "c" * 100_000  # the right shape, hostile content: dropped, not shown
    hostile.append(
        [payload(f'{{"call_id": "{huge}", "downstream": "d", "waiting": true}}'.encode())]
    )
    nan = b'{"call_id": "s1", "downstream": "d", "waiting": false, "waited_ms": NaN}'
    hostile.append([payload(nan)])
    for payloads in hostile:
        await handle.signal(names.SLOT_WAIT_SIGNAL, args=[RawValue(p) for p in payloads])
    # The same for a tool's progress report: bad shapes, huge or NaN content, dropped.
    reports = [[p] for p, _ in UNREADABLE.values()] + list(OTHER_SHAPES.values())
    reports.append([payload(f'{{"call_id": "s1", "progress": 1, "message": "{huge}"}}'.encode())])
    reports.append([payload(b'{"call_id": "s1", "progress": NaN}')])
    for payloads in reports:
        await handle.signal(names.TOOL_PROGRESS_SIGNAL, args=[RawValue(p) for p in payloads])
    shown = await handle.query(names.PROGRESS_QUERY, result_type=RunProgress)
    assert huge[:1000] not in shown.model_dump_json() and "NaN" not in shown.model_dump_json()
    assert all(step.reported is None for step in shown.steps)

    # Updates are refused, naming why; none reaches history.
    for p, words in UNREADABLE.values():
        with pytest.raises(WorkflowUpdateFailedError) as refused:
            await handle.execute_update(names.APPROVE_UPDATE, RawValue(p))
        assert_named(("failed", refused.value.cause), errors.UNDECODABLE_PAYLOAD, words)
    for name, payloads in OTHER_SHAPES.items():
        with pytest.raises(WorkflowUpdateFailedError) as refused:
            await handle.execute_update(names.APPROVE_UPDATE, args=[RawValue(p) for p in payloads])
        cause = refused.value.cause
        assert isinstance(cause, ApplicationError) and cause.type == errors.INVALID_REQUEST, name
    with pytest.raises(WorkflowUpdateFailedError) as refused:
        await handle.execute_update(names.APPROVE_UPDATE, {"approved": "maybe", "approver": "x"})
    assert_named(("failed", refused.value.cause), errors.INVALID_REQUEST, "approved")

    assert (await until_awaiting(handle, timeout_s=5)).tool == "create_refund"
    await handle.execute_update(
        names.APPROVE_UPDATE,
        ApprovalDecision(approved=False, approver="bob", reason="no", approval_id=1),
    )
    result = await asyncio.wait_for(handle.result(), UNREADABLE_DEADLINE_S)
    refund = next(s for s in result.steps if s.tool == "create_refund")
    assert refund.error is not None and refund.error.type == errors.APPROVAL_DECLINED
    assert await workflow_task_failures(handle) == []
