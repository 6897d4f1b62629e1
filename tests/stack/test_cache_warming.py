"""Warming: the hot questions of the day are re-run before their cache entries expire."""

from __future__ import annotations

import uuid
from datetime import timedelta

from temporalio.client import ScheduleIntervalSpec

from agentkeel.schemas.lanes import LANE_PRIORITY_KEYS, Lane
from agentkeel.schemas.path_cache import path_key
from agentkeel.schemas.result import CacheStatus
from agentkeel.schemas.warming import WarmInput
from agentkeel.settings.connections import redis_client
from agentkeel.settings.model_tiers import effective_cache_version
from agentkeel.workers.warming_schedule import (
    SCHEDULE_ID,
    ensure_warming_schedule,
    warmer_priority,
)
from agentkeel.workflows.warmer import CacheWarmerWorkflow
from tests.support.agent_stack import AgentStack

HOT = "What is your return policy for damaged items?"
LUKEWARM = "How long does shipping take?"


async def test_warmer_renews_hot_entries_that_ran_out(stack: AgentStack, redis_url: str) -> None:
    for _ in range(3):
        await stack.ask(HOT)
    await stack.ask(LUKEWARM)
    await stack.ask("Please refund $1.00 for order 1001")  # moved money: never replayed
    redis = redis_client(redis_url)
    version = effective_cache_version(stack.settings)
    try:
        await redis.delete(path_key(stack.tenant, HOT, version))  # as if it had expired
        warm_id = f"warm-{uuid.uuid4().hex[:8]}"
        result = await stack.client.execute_workflow(
            CacheWarmerWorkflow.run,
            WarmInput(top_n=5, renew_below_s=60),
            id=warm_id,
            task_queue=stack.task_queue,
            priority=warmer_priority(stack.settings),  # as its schedule starts it
        )
        # Its run is in the warming lane, on behalf of the question's tenant.
        child = await stack.client.get_workflow_handle(f"{warm_id}-0").describe()
        priority = child.raw_description.workflow_execution_info.priority
        assert priority.priority_key == LANE_PRIORITY_KEYS[Lane.WARMING]
        assert priority.fairness_key == stack.tenant
        assert [q.question for q in result.warmed] == [HOT], "only what ran out is re-run"
        assert result.warmed[0].asked == 3
        assert result.considered == 2, "the refund question is not a warming candidate"
        assert await redis.pttl(path_key(stack.tenant, HOT, version)) > 0
        again = await stack.client.execute_workflow(
            CacheWarmerWorkflow.run,
            WarmInput(top_n=5, renew_below_s=10**6),  # everything counts as due
            id=f"warm-{uuid.uuid4().hex[:8]}",
            task_queue=stack.task_queue,
        )
        counts = {q.question: q.asked for q in again.warmed}
        assert counts[HOT] == 3, "the warmer's own runs do not make a question hotter"
    finally:
        await redis.aclose()
    assert (await stack.ask(HOT)).cache == CacheStatus.EXACT


async def test_schedule_is_created_updated_and_keeps_a_pause(stack: AgentStack) -> None:
    settings = stack.settings.model_copy(update={"warm_every_s": 300})
    await ensure_warming_schedule(stack.client, settings)
    handle = stack.client.get_schedule_handle(SCHEDULE_ID)
    try:
        await handle.pause(note="ops: paused for a deploy")
        await ensure_warming_schedule(
            stack.client, settings.model_copy(update={"warm_every_s": 120})
        )
        described = await handle.describe()
        assert described.schedule.state.paused, "a worker restart must not undo a pause"
        assert described.schedule.spec.intervals == [
            ScheduleIntervalSpec(every=timedelta(seconds=120))
        ]
    finally:
        await handle.delete()
