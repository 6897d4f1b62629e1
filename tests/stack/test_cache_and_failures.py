"""The exact path cache, and at-most-once refunds under activity retries."""

from __future__ import annotations

import asyncpg
from temporalio import activity

from agentkeel.examples.shop.tools import CreateRefundInput, Refund
from agentkeel.schemas.result import CacheStatus, StepStatus
from tests.support.agent_stack import AgentStack, StackFactory
from tests.support.history import local_activity_markers, scheduled_activities
from tests.support.plans import KB_QUESTION
from tests.support.shop_tools import ShopActivities


async def test_cache_hit_runs_no_tool_activity(stack: AgentStack) -> None:
    first = await stack.ask(KB_QUESTION)
    assert first.cache == CacheStatus.MISS
    assert [s.tool for s in first.steps] == ["search_kb"]

    handle = await stack.start("  what is your RETURN policy for damaged items  ")
    second = await handle.result()
    assert second.cache == CacheStatus.EXACT
    assert second.answer == first.answer
    assert second.workflow_id == handle.id
    history = await handle.fetch_history()
    assert scheduled_activities(history) == [], "a hit ends the run after lookup_cache"
    local = local_activity_markers(history)
    assert len(local) == 2, "the lookup, then the run record: both local activities"
    assert b"lookup_cache" in local[0] and b"store" in local[1]


async def test_cache_is_per_tenant_and_skips_side_effects(stack: AgentStack) -> None:
    await stack.ask(KB_QUESTION)
    other = await stack.ask(KB_QUESTION, tenant=stack.tenant + "-other")
    assert other.cache == CacheStatus.MISS
    refund_q = "Please refund $1.00 for order 1003"
    first = await stack.ask(refund_q)
    assert first.steps[-1].tool == "create_refund"
    again = await stack.ask(refund_q)
    assert again.cache == CacheStatus.MISS, "a side-effecting path is never served from cache"


class CrashAfterRefund:
    """Runs the real refund, then fails its first attempt as a worker crash would."""

    def __init__(self, tools: ShopActivities) -> None:
        self._tools = tools
        self.attempts: list[int] = []

    @activity.defn(name="create_refund")
    async def create_refund(self, args: CreateRefundInput) -> Refund:
        if args.authorize_only:  # the authority check before the claim: nothing is refunded
            return await self._tools.create_refund(args)
        refund = await self._tools.create_refund(args)
        self.attempts.append(activity.info().attempt)
        if activity.info().attempt == 1:
            raise RuntimeError("worker lost after the refund was committed")
        return refund


async def test_refund_retried_after_insert_refunds_once(
    make_stack: StackFactory, database_url: str
) -> None:
    import httpx

    pool = await asyncpg.create_pool(database_url, min_size=1, max_size=2)
    try:
        async with httpx.AsyncClient() as http:
            crashing = CrashAfterRefund(ShopActivities(pool, http, "http://unused"))
            stack = await make_stack(replace_activities=[crashing.create_refund])
            handle = await stack.start("Please refund $5.00 for order 1001, it arrived damaged")
            result = await handle.result()
        refund = next(s for s in result.steps if s.tool == "create_refund")
        assert crashing.attempts == [1, 2]
        assert refund.status == StepStatus.SUCCEEDED
        assert refund.output["created"] is False, "the retry found the refund of attempt 1"
        first_run = handle.first_execution_run_id or handle.result_run_id
        rows = await pool.fetch(
            "SELECT amount_cents, idempotency_key FROM refunds WHERE idempotency_key LIKE $1",
            f"{first_run}/%",
        )
        assert [(r["amount_cents"], r["idempotency_key"]) for r in rows] == [
            (500, f"{first_run}/create_refund:order_id=1001:amount_cents=500")
        ]
    finally:
        await pool.close()
