"""A run's answer reaches `AgentClient.ask` once decided, before the run record is written
(`schemas.answers`), and a run whose worker serves no policy step never offers it one
(`policy-offer-v1`); the gateway's waiting start and its view answer on the same
announcement. Real dev server, Postgres and Redis; the models are scripted fakes."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Sequence
from typing import Any

import asyncpg
import pytest
import redis.asyncio as aioredis
from temporalio import activity
from temporalio.api.enums.v1 import EventType
from temporalio.api.history.v1 import HistoryEvent
from temporalio.client import WorkflowExecutionStatus, WorkflowFailureError
from temporalio.exceptions import CancelledError

from agentkeel import AgentClient, AgentRequest
from agentkeel.activities.answer_board import announce
from agentkeel.client.answer_watch import AnswerWatch, first_answer
from agentkeel.schemas import names
from agentkeel.schemas.answers import ANSWER_FIELD, answer_key
from agentkeel.schemas.result import AgentResult
from agentkeel.schemas.run_record import StoreInput, StoreResult
from agentkeel.workflows.release import FIFTH_RELEASE_PATCH
from tests.support.agent_stack import AgentStack, StackFactory
from tests.support.fakes import HEAVY_ANSWER, STATUS_PLAN, cascade
from tests.support.gateway_http import gateway


async def test_the_answer_is_announced_once_recorded_and_before_the_run_closes(
    make_stack: StackFactory, database_url: str, redis_url: str
) -> None:
    """While the run records' table is locked the caller waits (the answer is announced only
    after its record and cache entry: a next turn reads them); once it is written, the
    caller has the answer, the same the run then returns."""
    stack = await make_stack()
    client, workflow_id, request = _asked(stack, "announced")
    handle = stack.client.get_workflow_handle(workflow_id, result_type=AgentResult)
    lock = await asyncpg.connect(database_url)
    try:
        async with lock.transaction():
            await lock.execute("LOCK TABLE agent_runs IN EXCLUSIVE MODE")
            asking = asyncio.ensure_future(client.ask(request, workflow_id=workflow_id))
            await asyncio.sleep(1.5)
            assert not asking.done()  # no announcement before the record
        answer = await asyncio.wait_for(asking, 30)
        final = await handle.result()
        recorded = await lock.fetchval(
            "SELECT answer FROM agent_runs WHERE workflow_id = $1", workflow_id
        )
    finally:
        await lock.close()
        await client.close()
    assert answer.workflow_id == workflow_id and answer.run_id == final.run_id
    assert answer.answer == final.answer == recorded and "1001" in answer.answer
    assert [s.status for s in answer.steps] == [s.status for s in final.steps]
    assert answer.timings_ms.total == final.timings_ms.total
    redis = aioredis.from_url(redis_url)
    try:  # announced once, the very result the run returned
        entries: Any = await redis.xrange(answer_key(workflow_id, final.run_id))
    finally:
        await redis.aclose()
    assert len(entries) == 1
    assert AgentResult.model_validate_json(entries[0][1][ANSWER_FIELD.encode()]) == answer


async def test_ask_returns_the_announced_answer_while_the_run_is_still_open(
    make_stack: StackFactory, redis_url: str
) -> None:
    """A store held after it announces (a stand-in: the real one writes, then announces,
    then returns at once): `ask` has the answer while the run is open, and the run then
    returns the same answer."""
    release = asyncio.Event()
    redis = aioredis.from_url(redis_url)
    stack = await make_stack(replace_activities=[_announce_then_hold(redis, release)])
    client, workflow_id, request = _asked(stack, "early")
    handle = stack.client.get_workflow_handle(workflow_id, result_type=AgentResult)
    try:
        answer = await asyncio.wait_for(client.ask(request, workflow_id=workflow_id), 20)
        assert (await handle.describe()).status == WorkflowExecutionStatus.RUNNING
        release.set()
        final = await handle.result()
    finally:
        release.set()
        await client.close()
        await redis.aclose()
    assert final.answer == answer.answer and final.run_id == answer.run_id
    assert [s.status for s in final.steps] == [s.status for s in answer.steps]


async def test_a_run_cancelled_while_it_records_announces_nothing(
    make_stack: StackFactory, redis_url: str
) -> None:
    """A store held before it announces (a stand-in: the real one announces last, after
    the record and the cache entry): cancelled then, the run ends cancelled and its caller
    is told so; no answer was announced that the run does not return."""
    holding, release = asyncio.Event(), asyncio.Event()
    redis = aioredis.from_url(redis_url)

    @activity.defn(name=names.STORE)
    async def hold_then_announce(request: StoreInput) -> StoreResult:
        if request.announce:  # (the cancelled run's own record is not held)
            holding.set()
            await release.wait()
            await announce(redis, request.result)
        return StoreResult(recorded=True, cached=False)

    stack = await make_stack(replace_activities=[hold_then_announce])
    client, workflow_id, request = _asked(stack, "cancelled")
    try:
        asking = asyncio.ensure_future(client.ask(request, workflow_id=workflow_id))
        await asyncio.wait_for(holding.wait(), 30)
        await stack.client.get_workflow_handle(workflow_id).cancel()
        with pytest.raises(WorkflowFailureError) as failed:
            await asyncio.wait_for(asking, 30)
        assert isinstance(failed.value.cause, CancelledError)
        release.set()
        await asyncio.sleep(0.3)
        run_id = (await stack.client.get_workflow_handle(workflow_id).describe()).run_id
        assert await redis.exists(answer_key(workflow_id, run_id)) == 0
    finally:
        release.set()
        await client.close()
        await redis.aclose()


def _answered(answer: str, workflow_id: str, run_id: str) -> AgentResult:
    """A run's result as a store step announces it."""
    return AgentResult.model_validate(
        {
            "answer": answer,
            "route": {"intent": "lookup", "confidence": 1.0},
            "cache": "miss",
            "plan": {"steps": []},
            "workflow_id": workflow_id,
            "run_id": run_id,
        }
    )


async def test_the_watch_takes_a_valid_announcement_only_and_stops_when_told(
    redis_url: str,
) -> None:
    redis = aioredis.from_url(redis_url)
    workflow_id = f"watched-{uuid.uuid4().hex[:8]}"
    keys = [answer_key(workflow_id, run) for run in ("hostile", "good", "silent")]
    never: asyncio.Future[AgentResult] = asyncio.get_running_loop().create_future()
    try:
        # An entry that is not an `AgentResult` is no answer: the run's result decides.
        await redis.xadd(keys[0], {ANSWER_FIELD: '{"answer": 1, "not": "a result"}'})
        assert await AnswerWatch(redis, workflow_id, "hostile", window_s=1).answer() is None

        async def failed() -> AgentResult:
            raise RuntimeError("the run failed")

        with pytest.raises(RuntimeError, match="the run failed"):  # the run's failure is kept
            await first_answer(failed(), redis, workflow_id, "silent", window_s=5)

        # A valid announcement answers though the run's result never comes.
        announced = _answered("Found: shipped.", workflow_id, "good")
        await redis.xadd(keys[1], {ANSWER_FIELD: announced.model_dump_json()})
        got = await asyncio.wait_for(first_answer(never, redis, workflow_id, "good"), 5)
        assert got == announced and never.cancelled()

        # Stopped (as `first_answer` does once the result won), a watch reads no more.
        watch = AnswerWatch(redis, workflow_id, "silent", window_s=30, block_ms=100)
        watching = asyncio.ensure_future(watch.answer())
        await asyncio.sleep(0.35)
        watch.stop()
        assert await asyncio.wait_for(watching, 1) is None
        reads = watch.reads
        await asyncio.sleep(0.3)
        assert 2 <= reads == watch.reads
    finally:
        await redis.delete(*keys)
        await redis.aclose()


async def test_a_continued_run_announces_on_the_key_its_chains_caller_watches(
    redis_url: str,
) -> None:
    """A run that continues a chain (continue-as-new) announces its answer on its own key
    and on the first run's, which the caller who started the chain watches."""
    redis = aioredis.from_url(redis_url)
    workflow_id = f"chain-{uuid.uuid4().hex[:8]}"
    keys = [answer_key(workflow_id, run) for run in ("first", "third")]
    never: asyncio.Future[AgentResult] = asyncio.get_running_loop().create_future()
    continued = _answered("Found: delivered.", workflow_id, "third")
    try:
        await announce(redis, continued, also_run_id="first")
        got = await asyncio.wait_for(first_answer(never, redis, workflow_id, "first"), 5)
        assert got == continued
        assert await AnswerWatch(redis, workflow_id, "third", window_s=1).answer() == continued
    finally:
        never.cancel()
        await redis.delete(*keys)
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
    # The offer's branch (`policy-offer-v1`), taken under the release that gathers it.
    assert any(FIFTH_RELEASE_PATCH.encode() in p for p in _patch_ids(events))


def _patch_ids(events: Sequence[HistoryEvent]) -> list[bytes]:
    return [
        e.marker_recorded_event_attributes.details["patch-data"].payloads[0].data
        for e in events
        if e.event_type == EventType.EVENT_TYPE_MARKER_RECORDED
        and e.marker_recorded_event_attributes.marker_name == "core_patch"
    ]


def _announce_then_hold(redis: aioredis.Redis, release: asyncio.Event) -> Any:
    """A stand-in store that announces the answer, then holds the run open until
    `release` (the real one writes, then announces, then returns at once)."""

    @activity.defn(name=names.STORE)
    async def announce_then_hold(request: StoreInput) -> StoreResult:
        if request.announce:
            await announce(redis, request.result)
            await release.wait()
        return StoreResult(recorded=True, cached=False)

    return announce_then_hold


def _asked(stack: AgentStack, prefix: str) -> tuple[AgentClient, str, AgentRequest]:
    """A client of `stack`, a workflow id of its own and an order question, uncached."""
    request = AgentRequest(
        question="where is order 1001", tenant=stack.tenant, options={"use_cache": False}
    )
    return stack.agent_client(), f"{prefix}-{uuid.uuid4().hex[:10]}", request


async def test_the_gateway_answers_a_waiting_start_and_its_view_once_announced(
    make_stack: StackFactory, redis_url: str
) -> None:
    """The stand-in store holds the run open after it announces: `POST ?wait=true` answers
    `completed` with the answer meanwhile, a `GET` agrees, and the run then closes with the
    same answer."""
    release = asyncio.Event()
    redis = aioredis.from_url(redis_url)
    stack = await make_stack(replace_activities=[_announce_then_hold(redis, release)])
    body = {"question": "where is order 1001", "tenant": stack.tenant}
    try:
        async with gateway(stack) as http:
            waited = await http.post(
                "/v1/runs", params={"wait": "true", "timeout_s": "20"},
                json={**body, "options": {"use_cache": False}},
            )  # fmt: skip
            assert waited.status_code == 200, waited.text
            view = waited.json()
            handle = stack.client.get_workflow_handle(view["workflow_id"], result_type=AgentResult)
            assert (await handle.describe()).status == WorkflowExecutionStatus.RUNNING
            read = (await http.get(f"/v1/runs/{view['workflow_id']}")).json()
            release.set()
            final = await handle.result()
    finally:
        release.set()
        await redis.aclose()
    assert view["state"] == read["state"] == "completed"
    assert view["result"]["answer"] == read["result"]["answer"] == final.answer
    assert "1001" in final.answer and view["run_id"] == final.run_id
