"""Tool arguments are checked before any call: a bad one fails its own step, at once.

A NUL byte, an integer past int64 or a megabyte of text would otherwise reach Postgres (or
fail Temporal's decode) as a retryable error: retried, and in a merged request failing
every call sent with it. Checked first, the call fails as `InvalidArguments`, one attempt,
and its batch-mates are answered.
"""

from __future__ import annotations

import time
import uuid
from datetime import timedelta
from typing import Any

import pytest
from temporalio import workflow
from temporalio.api.enums.v1 import EventType
from temporalio.client import WorkflowFailureError
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError
from temporalio.worker import UnsandboxedWorkflowRunner, Worker

from agentkeel.schemas import errors, names
from agentkeel.schemas.result import StepStatus
from tests.support.agent_stack import AgentStack, StackFactory
from tests.support.fakes import FakeScriptedPolicy

FAILS_WITHIN_S = 10.0
"""A refused call ends its step in well under a retry's backoff, on a shared machine."""


def started_attempts(events: Any) -> list[int]:
    return [
        e.activity_task_started_event_attributes.attempt
        for e in events
        if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED
    ]


async def test_a_nul_byte_fails_its_own_call_and_its_batch_mates_are_answered(
    make_stack: StackFactory,
) -> None:
    skus = ["SKU-00001", "SKU\x00-1", "SKU-00002"]
    plan = {
        "steps": [
            {"id": f"s{i}", "tool": "check_inventory", "args": {"sku": sku}}
            for i, sku in enumerate(skus, 1)
        ]
    }
    stack = await make_stack(policy=FakeScriptedPolicy([plan]), merge_window_ms=50)
    began = time.monotonic()
    handle = await stack.start("stock of three", options={"max_replans": 0, "use_cache": False})
    result = await handle.result()
    assert time.monotonic() - began < FAILS_WITHIN_S
    by_id = {s.id: s for s in result.steps}
    bad = by_id["s2"]
    assert bad.status is StepStatus.FAILED and bad.error is not None
    assert bad.error.type == errors.INVALID_ARGUMENTS and bad.error.non_retryable
    assert "U+0000" in bad.error.message
    for good, sku in (("s1", "SKU-00001"), ("s3", "SKU-00002")):
        assert by_id[good].status is StepStatus.SUCCEEDED and by_id[good].output["sku"] == sku
    history = await handle.fetch_history()
    assert set(started_attempts(history.events)) == {1}, "a call was retried"


@workflow.defn(name=names.AGENT_WORKFLOW)
class ForgedCall:
    """Stands in for a run whose activity input the workflow never validated (recorded
    before a check, or forged): it sends one tool call's raw payload as it is."""

    @workflow.run
    async def run(self, call: dict[str, Any]) -> Any:
        return await workflow.execute_activity(
            call["tool"],
            call["payload"],
            task_queue=call["queue"],
            start_to_close_timeout=timedelta(seconds=10),
            retry_policy=RetryPolicy(maximum_attempts=3, initial_interval=timedelta(seconds=2)),
        )


@pytest.mark.parametrize(
    ("tool", "payload", "says"),
    [
        ("get_order", {"order_id": 10**30}, "64-bit"),
        ("check_inventory", {"sku": "x" * 1_000_000}, "characters"),
        ("get_order", {"order_id": 2**40}, "order_id"),  # past the tool's own bound
    ],
    ids=["order-id-1e30", "one-megabyte-string", "past-declared-bound"],
)
async def test_an_unvalidated_payload_fails_once_as_invalid_arguments(
    stack: AgentStack, tool: str, payload: dict[str, Any], says: str
) -> None:
    queue = f"forged-{uuid.uuid4().hex[:8]}"
    actor = {"role": "staff", "name": "ann"}
    async with Worker(
        stack.client,
        task_queue=queue,
        workflows=[ForgedCall],
        workflow_runner=UnsandboxedWorkflowRunner(),
    ):
        handle = await stack.client.start_workflow(
            ForgedCall.run,
            {"tool": tool, "payload": {**payload, "actor": actor}, "queue": stack.task_queue},
            id=f"forged-{uuid.uuid4().hex[:12]}",
            task_queue=queue,
        )
        began = time.monotonic()
        with pytest.raises(WorkflowFailureError) as failed:
            await handle.result()
        assert time.monotonic() - began < FAILS_WITHIN_S
    cause = failed.value.cause
    assert isinstance(cause, ActivityError) and isinstance(cause.cause, ApplicationError)
    assert cause.cause.type == errors.INVALID_ARGUMENTS and cause.cause.non_retryable
    assert says in cause.cause.message
    history = await handle.fetch_history()
    assert started_attempts(history.events) == [1]
