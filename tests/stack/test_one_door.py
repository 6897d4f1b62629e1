"""One door: no activity or workflow a worker registers makes a side effect by itself.

On the real dev server: a standalone `create_refund`, a workflow of another type calling
the tool or the effects ledger, and an `AgentFanOut` started directly are all refused at
once (`CallerNotAllowed`), and no refund exists. Then every activity the CPU worker
registers is called as a standalone activity would be: each refuses before its code runs.
"""

from __future__ import annotations

import dataclasses
import uuid
from datetime import timedelta
from typing import Any

import asyncpg
import pytest
from temporalio import workflow
from temporalio.client import WorkflowFailureError
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError
from temporalio.testing import ActivityEnvironment
from temporalio.worker import Worker

from agentkeel.schemas import errors, names
from agentkeel.workers.resources import cpu_activities
from agentkeel.workers.stand_ins import activity_name
from tests.support.agent_stack import AgentStack
from tests.support.refunds import refundable_order

ONCE = RetryPolicy(maximum_attempts=3)  # refusals are non-retryable: one attempt each


def refund_input(order_id: int, tenant: str) -> dict[str, Any]:
    """What a run would send the tool: valid in every field, the key forged."""
    return {
        "tenant": tenant,
        "order_id": order_id,
        "amount_cents": 15_000,
        "reason": "standalone",
        "actor": {"role": "system"},
        "idempotency_key": f"forged-{uuid.uuid4().hex}",
    }


async def refunds_of(database_url: str, order_id: int) -> int:
    conn = await asyncpg.connect(database_url)
    try:
        return int(
            await conn.fetchval(
                "SELECT count(*) FROM refunds WHERE order_id = $1 AND reason = 'standalone'",
                order_id,
            )
        )
    finally:
        await conn.close()


@workflow.defn(name="Intruder", sandboxed=False)
class Intruder:
    """Another workflow type on the same namespace, calling agentkeel's activities."""

    @workflow.run
    async def run(self, target: dict[str, Any]) -> list[str]:
        refused = []
        for name, arg in target["calls"]:
            try:
                await workflow.execute_activity(
                    name,
                    arg,
                    task_queue=target["queue"],
                    start_to_close_timeout=timedelta(seconds=10),
                    retry_policy=ONCE,
                )
            except ActivityError as exc:
                assert isinstance(exc.cause, ApplicationError)
                refused.append(exc.cause.type or "")
        return refused


async def test_no_other_caller_makes_a_side_effect(stack: AgentStack, database_url: str) -> None:
    conn = await asyncpg.create_pool(database_url, min_size=1, max_size=1)
    try:
        order_id, _ = await refundable_order(conn, at_least_cents=15_000)
    finally:
        await conn.close()
    client = stack.client

    # A standalone activity (`temporal activity execute --type create_refund ...`).
    with pytest.raises(Exception) as standalone:
        await client.execute_activity(
            "create_refund",
            refund_input(order_id, stack.tenant),
            id=f"standalone-{uuid.uuid4().hex[:8]}",
            task_queue=stack.task_queue,
            start_to_close_timeout=timedelta(seconds=10),
            retry_policy=ONCE,
        )
    assert errors.CALLER_NOT_ALLOWED in repr(standalone.value.__cause__ or standalone.value)

    # Another workflow type: the tool, and the ledger it could release a claim with.
    queue = f"intruder-{uuid.uuid4().hex[:8]}"
    settle = {"effect_key": "any", "status": "failed"}
    calls = [["create_refund", refund_input(order_id, stack.tenant)], [names.SETTLE_EFFECT, settle]]
    async with Worker(client, task_queue=queue, workflows=[Intruder]):
        refused = await client.execute_workflow(
            Intruder.run,
            {"queue": stack.task_queue, "calls": calls},
            id=f"intruder-{uuid.uuid4().hex[:8]}",
            task_queue=queue,
            execution_timeout=timedelta(seconds=60),
        )
    assert refused == [errors.CALLER_NOT_ALLOWED, errors.CALLER_NOT_ALLOWED]

    # A fan-out part started directly, with a side effect and a ref of its choosing.
    part = {
        "step_id": "s1",
        "tool": "create_refund",
        "calls": [refund_input(order_id, stack.tenant)],
        "actor": {"role": "system"},
        "task_queue": stack.task_queue,
        "max_concurrency": 1,
        "ref": "anything/out",
        "tenant": stack.tenant,
    }
    with pytest.raises(WorkflowFailureError) as direct:
        await client.execute_workflow(
            names.FAN_OUT_WORKFLOW,
            part,
            id=f"direct-part-{uuid.uuid4().hex[:8]}",
            task_queue=stack.task_queue,
            execution_timeout=timedelta(seconds=60),
        )
    cause = direct.value.cause
    assert isinstance(cause, ApplicationError) and cause.type == errors.CALLER_NOT_ALLOWED
    assert await refunds_of(database_url, order_id) == 0


async def test_every_registered_activity_refuses_a_caller_that_is_not_a_run(
    stack: AgentStack, carrier_url: str
) -> None:
    environ = {"AGENTKEEL_SHOP_CARRIER_URL": carrier_url}
    async with cpu_activities(stack.settings, domain_environ=environ) as registered:
        assert len(registered) > 10
        standalone = ActivityEnvironment()
        standalone.info = dataclasses.replace(standalone.info, workflow_id=None, workflow_type=None)
        foreign = ActivityEnvironment()
        foreign.info = dataclasses.replace(foreign.info, workflow_type="Intruder")
        for activity_fn in registered:
            for env in (standalone, foreign):
                # Any input: the door answers before the activity reads it.
                with pytest.raises(ApplicationError) as refused:
                    await env.run(activity_fn, {"order_id": 1})
                name = activity_name(activity_fn)
                assert refused.value.type == errors.CALLER_NOT_ALLOWED, name
                assert refused.value.non_retryable, name
