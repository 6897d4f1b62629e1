"""A run's answer reaches `AgentClient.ask` once decided, before the run record is written
(`schemas.answers`), and a run whose worker serves no policy step never offers it one
(`policy-offer-v1`). Real dev server, Postgres and Redis; the models are scripted fakes."""

from __future__ import annotations

import asyncio
import uuid

import asyncpg
import pytest
import redis.asyncio as aioredis
from temporalio.api.enums.v1 import EventType
from temporalio.client import WorkflowExecutionStatus

from agentkeel import AgentRequest
from agentkeel.client.answer_watch import announced_answer, first_answer
from agentkeel.schemas import names
from agentkeel.schemas.answers import ANSWER_FIELD, answer_key
from agentkeel.schemas.result import AgentResult
from agentkeel.workflows.nodes.cache_lookup import POLICY_OFFER_PATCH
from tests.support.agent_stack import StackFactory
from tests.support.fakes import HEAVY_ANSWER, STATUS_PLAN, cascade


async def test_ask_returns_the_announced_answer_while_the_record_waits(
    make_stack: StackFactory, database_url: str
) -> None:
    """With the run record's table locked, the caller still gets the answer; the run then
    completes with that same answer once the record is written."""
    stack = await make_stack()
    client = stack.agent_client()
    workflow_id = f"announced-{uuid.uuid4().hex[:10]}"
    request = AgentRequest(
        question="where is order 1001", tenant=stack.tenant, options={"use_cache": False}
    )
    lock = await asyncpg.connect(database_url)
    try:
        async with lock.transaction():
            await lock.execute("LOCK TABLE agent_runs IN EXCLUSIVE MODE")
            answer = await asyncio.wait_for(client.ask(request, workflow_id=workflow_id), 30)
            handle = stack.client.get_workflow_handle(workflow_id, result_type=AgentResult)
            # The record is still blocked: the answer came before the run closed.
            assert (await handle.describe()).status == WorkflowExecutionStatus.RUNNING
        final = await handle.result()
    finally:
        await lock.close()
        await client.close()
    assert answer.workflow_id == workflow_id and answer.run_id == final.run_id
    assert answer.answer == final.answer and "1001" in answer.answer
    assert [s.status for s in answer.steps] == [s.status for s in final.steps]
    assert answer.timings_ms.total == final.timings_ms.total


async def test_an_unreadable_announcement_leaves_the_caller_on_the_runs_result(
    redis_url: str,
) -> None:
    redis = aioredis.from_url(redis_url)
    workflow_id, run_id = f"hostile-{uuid.uuid4().hex[:8]}", "run-1"
    key = answer_key(workflow_id, run_id)
    try:
        await redis.xadd(key, {ANSWER_FIELD: '{"answer": 1, "not": "a result"}'})
        assert await announced_answer(redis, workflow_id, run_id, window_s=1) is None
        # Nothing announced within the window: None, after about the window.
        assert await announced_answer(redis, "nobody", "none", window_s=0.3) is None

        async def failed() -> AgentResult:
            raise RuntimeError("the run failed")

        # The run's own failure is the caller's, announcement or not.
        with pytest.raises(RuntimeError, match="the run failed"):
            await first_answer(failed(), redis, workflow_id, run_id)
    finally:
        await redis.delete(key)
        await redis.aclose()


async def test_a_worker_that_serves_no_policy_step_is_never_offered_one(
    make_stack: StackFactory,
) -> None:
    policy, _light, _heavy = cascade(
        {"refund": 0.55, "order_status": 0.45}, [{**STATUS_PLAN, "intent": "order_status"}]
    )
    stack = await make_stack(policy=policy)  # the CPU worker's local policy is off
    handle = await stack.start("where's my parcel for 1001")
    result = await handle.result()
    assert result.answer == HEAVY_ANSWER
    events = (await handle.fetch_history()).events
    local_types = [
        e.marker_recorded_event_attributes.details["data"].payloads[0].data
        for e in events
        if e.event_type == EventType.EVENT_TYPE_MARKER_RECORDED
        and e.marker_recorded_event_attributes.marker_name == "core_local_activity"
    ]
    offers = [names.LOCAL_ROUTE, names.LOCAL_PLAN, names.LOCAL_RESPOND]
    assert not [t for t in local_types if any(o.encode() in t for o in offers)]
    patches = [
        e.marker_recorded_event_attributes.details["patch-data"].payloads[0].data
        for e in events
        if e.event_type == EventType.EVENT_TYPE_MARKER_RECORDED
        and e.marker_recorded_event_attributes.marker_name == "core_patch"
    ]
    assert any(POLICY_OFFER_PATCH.encode() in p for p in patches)
