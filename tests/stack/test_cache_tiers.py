"""The path cache's tiers, invalidation, the tool-result cache, coalescing and the fast path."""

from __future__ import annotations

import asyncio
import time

import asyncpg
import pytest
import redis.asyncio as aioredis

from agentkeel.activities.cache.backend import CLOCK_SKEW_MARGIN_S
from agentkeel.activities.cache.reading_tier import POINTER_PREFIX as READING_PREFIX
from agentkeel.activities.cache.tool_results import KEY_PREFIX as TOOL_KEY_PREFIX
from agentkeel.schemas.request import AgentRequest, RunOptions
from agentkeel.schemas.result import CacheStatus, StepStatus
from tests.support.agent_stack import AgentStack, StackFactory
from tests.support.fakes import FakeScriptedPolicy
from tests.support.history import scheduled_activities
from tests.support.plans import KB_QUESTION, SlowInventory, step_output, wide_plan


async def test_live_path_reuses_the_plan_and_runs_tools_fresh(stack: AgentStack) -> None:
    first = await stack.ask("Where is order 1001?")
    assert first.cache == CacheStatus.MISS
    handle = await stack.start("where is ORDER 1001")
    second = await handle.result()
    # Tracking has no TTL: the answer can't be served, but the plan can.
    assert second.cache == CacheStatus.PLAN
    assert second.cache_match is not None
    assert second.route.tier == "cache"
    assert scheduled_activities(await handle.fetch_history()) == [
        "get_order",
        "track_shipment",
        "respond",
    ], "route (and plan) are skipped; the tools run fresh"
    assert second.plan == first.plan
    assert all(s.status == StepStatus.SUCCEEDED for s in second.steps)
    assert second.steps[0].started_at != first.steps[0].started_at


async def test_a_new_catalog_or_policy_version_starts_cold(make_stack: StackFactory) -> None:
    old = await make_stack()
    await old.ask(KB_QUESTION)
    assert (await old.ask(KB_QUESTION)).cache == CacheStatus.EXACT
    new = await make_stack(policy_version="rules-2")
    again = await new.ask(KB_QUESTION, tenant=old.tenant)
    assert again.cache == CacheStatus.MISS, "a deploy that changes behaviour serves no stale path"


@pytest.mark.smoke
async def test_refund_invalidates_cached_paths_and_tool_results(stack: AgentStack) -> None:
    question = "Can order 1001 be fulfilled from stock?"
    before = await stack.ask(question)
    assert (await stack.ask(question)).cache == CacheStatus.EXACT
    refund = await stack.ask("Please refund $1.00 for order 1001")
    assert step_output(refund, "create_refund")["created"] is True
    after = await stack.ask(question)
    assert after.cache == CacheStatus.MISS, "the refund changed order 1001: no stale answer"
    refunded = step_output(after, "get_order")["refunded_cents"]
    assert refunded == int(step_output(before, "get_order")["refunded_cents"]) + 100  # type: ignore[call-overload]


async def test_right_after_a_side_effect_runs_are_not_cached_for_the_skew_margin(
    stack: AgentStack,
) -> None:
    """Why a repeated question misses twice right after a side effect (docs/caching.md):
    a run whose reads began less than `CLOCK_SKEW_MARGIN_S` after the change it may have
    missed is answered but not stored, so the next ask misses too."""
    question = "Can order 1001 be fulfilled from stock?"
    await stack.ask(question)
    await stack.ask("Please refund $1.00 for order 1001")
    changed = time.monotonic()
    first = await stack.ask(question)
    second = await stack.ask(question)
    assert time.monotonic() - changed < CLOCK_SKEW_MARGIN_S, "asked within the margin"
    assert (first.cache, second.cache) == (CacheStatus.MISS, CacheStatus.MISS)
    await asyncio.sleep(CLOCK_SKEW_MARGIN_S + 0.5 - (time.monotonic() - changed))
    stored = await stack.ask(question)  # its reads began after the margin: stored
    assert stored.cache == CacheStatus.MISS
    assert (await stack.ask(question)).cache == CacheStatus.EXACT


async def test_tool_results_are_served_from_cache_within_ttl(
    stack: AgentStack, database_url: str, redis_url: str
) -> None:
    await stack.ask("Where is order 1003?")
    conn = await asyncpg.connect(database_url)
    try:  # behind the cache's back: a cached result must not see it within the TTL
        await conn.execute("UPDATE orders SET status = 'cancelled' WHERE order_id = 1003")
    finally:
        await conn.close()
    other = await stack.ask("Can order 1003 be fulfilled from stock?")
    assert step_output(other, "get_order")["status"] == "delivered"
    client = aioredis.from_url(redis_url)
    try:
        pattern = f"{TOOL_KEY_PREFIX}:*:get_order:{stack.tenant}:*"
        keys = [k async for k in client.scan_iter(match=pattern)]
    finally:
        await client.aclose()
    assert keys


async def test_identical_requests_in_flight_share_one_run(make_stack: StackFactory) -> None:
    slow = SlowInventory(hold_s=0.5)
    stack = await make_stack(
        replace_activities=[slow.check_inventory], policy=FakeScriptedPolicy([wide_plan(2)])
    )
    agents = stack.agent_client()
    request = AgentRequest(question="check two skus", tenant=stack.tenant)
    first, second = await asyncio.gather(agents.start(request), agents.start(request))
    assert first.id == second.id
    assert first.result_run_id == second.result_run_id, "the second caller attached to the run"
    alone = await agents.start(request, coalesce=False)
    assert alone.id != first.id
    await asyncio.gather(first.result(), alone.result())
    assert len(slow.calls) == 4, "two runs of two steps: the coalesced pair ran once"
    await agents.close()


async def test_a_client_beside_the_workers_starts_runs_eagerly(make_stack: StackFactory) -> None:
    # This process runs the CPU worker on the client's connection: the server hands the
    # run's first workflow task back in the start's reply (the SDK's own flag says so).
    stack = await make_stack(policy=FakeScriptedPolicy([wide_plan(1)]))
    agents = stack.agent_client()
    handle = await agents.start(AgentRequest(question="check a sku", tenant=stack.tenant))
    assert getattr(handle, "__temporal_eagerly_started") is True
    assert (await handle.result()).steps[0].status is StepStatus.SUCCEEDED
    await agents.close()


@pytest.mark.smoke
async def test_client_fast_path_answers_without_a_workflow(stack: AgentStack) -> None:
    await stack.ask(KB_QUESTION)
    agents = stack.agent_client()
    result = await agents.ask(AgentRequest(question=KB_QUESTION.lower(), tenant=stack.tenant))
    assert result.cache == CacheStatus.EXACT
    assert result.workflow_id == "", "no workflow was started"
    assert result.timings_ms.total < 100
    await agents.close()
    # Without Redis the helper falls back to the workflow, which still answers.
    dead = stack.agent_client(redis_url="redis://127.0.0.1:1/0")
    fallback = await dead.ask(AgentRequest(question=KB_QUESTION, tenant=stack.tenant))
    assert fallback.workflow_id != ""
    assert fallback.answer == result.answer
    await dead.close()


async def test_options_opt_out_of_reading_the_cache(stack: AgentStack) -> None:
    await stack.ask(KB_QUESTION)
    fresh = await stack.ask(KB_QUESTION, options=RunOptions(refresh_cache=True))
    assert fresh.cache == CacheStatus.BYPASS
    assert [s.tool for s in fresh.steps] == ["search_kb"]


async def test_semantic_tier_serves_paraphrases_and_refuses_other_entities(
    make_stack: StackFactory,
) -> None:
    pytest.importorskip("faiss", reason="the semantic extra is not installed")
    # The reading tier, asked first, would serve this paraphrase itself.
    stack = await make_stack(semantic=True, reading_cache="off")
    original = await stack.ask(KB_QUESTION)
    paraphrase = await stack.ask("Whats your policy on returning damaged items?")
    assert paraphrase.cache == CacheStatus.SEMANTIC
    assert paraphrase.answer == original.answer
    assert paraphrase.cache_match is not None
    assert paraphrase.cache_match.question == KB_QUESTION
    assert paraphrase.cache_match.similarity is not None
    assert paraphrase.cache_match.similarity >= stack.settings.semantic_threshold

    await stack.ask("Where is order 1001?")
    other_order = await stack.ask("Where is order 1002?")
    assert other_order.cache == CacheStatus.MISS, "a different order id is never a hit"
    assert step_output(other_order, "get_order")["order_id"] == 1002


async def test_reading_tier_serves_a_question_read_the_same(stack: AgentStack) -> None:
    original = await stack.ask("Do you offer free shipping?")
    assert original.cache == CacheStatus.MISS
    reworded = await stack.ask("is shipping free")
    assert reworded.cache == CacheStatus.CANONICAL
    assert reworded.answer == original.answer
    assert reworded.cache_match is not None
    assert reworded.cache_match.question == "Do you offer free shipping?"
    assert reworded.steps == original.steps, "served whole: no tool ran again"
    # A word the vocabulary does not fold must occur in both; a conversation never shares.
    assert (await stack.ask("is shipping free to Sydney")).cache == CacheStatus.MISS
    in_conversation = await stack.ask("is shipping free", conversation_id="c-reading")
    assert in_conversation.cache == CacheStatus.MISS

    await stack.ask("Where is my package TRK0000001003?")
    # About one parcel, where it is and its tracking are one answer (here: its plan, since
    # tracking has no TTL); another parcel is another request.
    assert (await stack.ask("track package TRK0000001003")).cache == CacheStatus.PLAN
    assert (await stack.ask("track package TRK0000001004")).cache == CacheStatus.MISS


async def test_reading_tier_misses_once_the_path_is_gone(stack: AgentStack, redis_url: str) -> None:
    await stack.ask("Do gift cards expire?")
    redis = aioredis.from_url(redis_url)
    pointers = [k async for k in redis.scan_iter(f"{READING_PREFIX}:*:{stack.tenant}@*")]
    assert len(pointers) == 1
    path = await redis.get(pointers[0])
    assert path is not None
    await redis.delete(path)  # as an invalidation or expiry would
    again = await stack.ask("please, do gift cards expire")
    assert again.cache == CacheStatus.MISS
    assert await redis.exists(pointers[0]) == 1, "the fresh run stored a new pointer"
    assert await redis.get(pointers[0]) != path
    await redis.aclose()


async def test_semantic_entries_of_another_version_are_not_served(
    make_stack: StackFactory,
) -> None:
    pytest.importorskip("faiss", reason="the semantic extra is not installed")
    old = await make_stack(semantic=True)
    await old.ask(KB_QUESTION)
    new = await make_stack(semantic=True, policy_version="rules-next")
    paraphrase = await new.ask("Whats your policy on returning damaged items?", tenant=old.tenant)
    assert paraphrase.cache == CacheStatus.MISS


async def test_read_only_runs_refuse_side_effects(stack: AgentStack, database_url: str) -> None:
    result = await stack.ask(
        "Please refund $1.00 for order 1001", options=RunOptions(read_only=True)
    )
    # The refund plan is rejected; join sends it back and the planner answers without one.
    assert result.replans == 1
    assert all(s.tool != "create_refund" for s in result.steps)
    conn = await asyncpg.connect(database_url)
    try:
        assert await conn.fetchval("SELECT count(*) FROM refunds WHERE order_id = 1001") == 0
    finally:
        await conn.close()
