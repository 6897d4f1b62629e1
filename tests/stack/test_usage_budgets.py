"""Usage and budgets on the real stack: runs whose usage is compared with the model server's
own counts, a run budget spent on purpose, a key's window budget refusing a new run.

The models are the token-timed OpenAI-compatible server (`bench.token_server`, a fake at
the model boundary) through agentkeel's real engine and LLM cascade; everything between
it and the caller is real: the workflow, the inference activities, Postgres, Redis, the
gateway.
"""

from __future__ import annotations

import uuid

import asyncpg
import httpx
import pytest
import redis.asyncio as aioredis
from temporalio.client import WorkflowFailureError
from temporalio.exceptions import ApplicationError
from temporalio.runtime import PrometheusConfig, Runtime, TelemetryConfig

from agentkeel.activities.usage_ledger import UsageLedger
from agentkeel.client.budgets import BudgetExhaustedError, WindowBudgets, WindowLimits
from agentkeel.gateway.keys import ApiKeys
from agentkeel.schemas import names
from agentkeel.schemas.actor import Actor
from agentkeel.schemas.request import AgentRequest
from agentkeel.schemas.result import AgentResult, CacheStatus, StepStatus
from agentkeel.schemas.route import Tier
from agentkeel.schemas.usage import ModelUsage, RunUsage, parse_prices
from agentkeel.settings.ports import free_port
from tests.support.agent_stack import StackFactory
from tests.support.gateway_http import OTHER_STAFF_TOKEN, STAFF_TOKEN, bearer, gateway, key
from tests.support.history import scheduled_activities
from tests.support.shop_model import (
    ORDER_QUESTION,
    POLICY_QUESTION,
    budget_past_the_route,
    shop_cascade,
)

NO_CACHE = {"use_cache": False}
BIG = {"tokens": 10_000_000}


async def run_row(database_url: str, run_id: str) -> asyncpg.Record:
    conn = await asyncpg.connect(database_url)
    try:
        row = await conn.fetchrow(
            "SELECT prompt_tokens, completion_tokens, cost_usd, usage FROM agent_runs "
            "WHERE run_id = $1",
            run_id,
        )
    finally:
        await conn.close()
    assert row is not None
    return row


async def test_a_runs_usage_is_what_the_model_server_counted(
    make_stack: StackFactory, database_url: str
) -> None:
    async with shop_cascade() as (policy, server):
        stack = await make_stack(policy=policy, model_prices="ideal=2:8", plan_ahead="off")
        result = await stack.ask(ORDER_QUESTION, options=NO_CACHE)
        served = (server.log.requests, server.log.prompt_tokens, server.log.output_tokens)
        await stack.ask(POLICY_QUESTION)
        asked = server.log.requests
        again = await stack.ask(POLICY_QUESTION)  # the same question: from the cache
        assert server.log.requests == asked  # no model was asked for it

    usage = result.usage
    assert usage is not None and not usage.cached
    # An unsure route: the light tier routes, the heavy tier plans and answers (streamed).
    assert (usage.calls, usage.prompt_tokens, usage.completion_tokens) == served
    assert usage.total_tokens == served[1] + served[2]
    assert [(m.tier, m.model, m.calls) for m in usage.by_model] == [
        (Tier.LIGHT, "ideal", 1),
        (Tier.HEAVY, "ideal", 2),
    ]
    assert not any(m.estimated for m in usage.by_model)
    assert usage.cost_usd == pytest.approx((2 * served[1] + 8 * served[2]) / 1e6)
    assert all(m.priced for m in usage.by_model)

    row = await run_row(database_url, result.run_id)
    assert (row["prompt_tokens"], row["completion_tokens"]) == served[1:]
    assert row["cost_usd"] == pytest.approx(usage.cost_usd)
    assert RunUsage.model_validate_json(row["usage"]) == usage

    # A cached answer cost nothing, and says why.
    assert again.cache is CacheStatus.EXACT
    assert again.usage == RunUsage(cached=True)
    assert (await run_row(database_url, again.run_id))["prompt_tokens"] == 0


async def test_a_spent_run_budget_degrades_to_the_light_tier_then_stops_by_name(
    make_stack: StackFactory, database_url: str
) -> None:
    async with shop_cascade() as (policy, server):
        stack = await make_stack(policy=policy, plan_ahead="off")
        probe = await stack.ask(ORDER_QUESTION, options=NO_CACHE)
        budget = budget_past_the_route(probe)  # past `degrade_at` once routed
        routed = budget["tokens"] - 1
        before = server.log.requests
        handle = await stack.start(ORDER_QUESTION, options={**NO_CACHE, "budget": budget})
        with pytest.raises(WorkflowFailureError) as failed:
            await handle.result()
        asked = server.log.requests - before
        # With room left after its degrade point, the run finishes on the light tier.
        roomy = {"tokens": 100 * routed, "degrade_at": routed / (100 * routed)}
        degraded = await stack.ask(ORDER_QUESTION, options={**NO_CACHE, "budget": roomy})

    assert degraded.answer and degraded.usage is not None
    assert [(m.tier, m.calls) for m in degraded.usage.by_model] == [(Tier.LIGHT, 3)]
    assert any("light tier" in w for w in degraded.warnings)

    cause = failed.value.cause
    assert isinstance(cause, ApplicationError)
    assert (cause.type, cause.non_retryable) == ("BudgetExhausted", True)
    assert f"of {routed + 1} tokens" in cause.message
    # What it did so far: routed, planned on the light tier (not the heavy one the route
    # chose), ran the plan's tools, and asked no model for the answer.
    partial = AgentResult.model_validate(cause.details[0])
    assert partial.usage is not None and asked == partial.usage.calls == 2
    assert [(m.tier, m.calls) for m in partial.usage.by_model] == [(Tier.LIGHT, 2)]
    assert partial.route.tier is Tier.HEAVY
    assert [s.status for s in partial.steps] == [StepStatus.SUCCEEDED] * 2
    assert partial.answer == ""
    assert partial.usage.total_tokens >= routed + 1
    row = await run_row(database_url, partial.run_id)
    assert row["prompt_tokens"] + row["completion_tokens"] == partial.usage.total_tokens


async def test_a_run_under_a_budget_plans_only_once_its_route_needs_a_plan(
    make_stack: StackFactory,
) -> None:
    """Planning beside the router throws the planner's tokens away when the route is sure:
    a run that pays for its tokens (`options.budget`) routes first, then plans."""
    async with shop_cascade() as (policy, _):
        stack = await make_stack(policy=policy, plan_ahead="always")
        budgeted = await stack.start(ORDER_QUESTION, options={**NO_CACHE, "budget": BIG})
        await budgeted.result()
        free = await stack.start(ORDER_QUESTION, options=NO_CACHE)
        await free.result()
    plans = [
        scheduled_activities(await h.fetch_history()).count(names.PLAN) for h in (budgeted, free)
    ]
    assert plans == [1, 0]  # a plan of its own after the route; the free run's beside it


async def test_a_key_past_its_window_budget_is_refused_new_runs(
    make_stack: StackFactory,
) -> None:
    staff = Actor(role="staff", name="bob")
    async with shop_cascade() as (policy, _):
        stack = await make_stack(policy=policy, plan_ahead="off", budget_tokens_per_key=100)
        keys = ApiKeys(
            [key(STAFF_TOKEN, stack.tenant, staff), key(OTHER_STAFF_TOKEN, stack.tenant, staff)]
        )
        body = {"question": ORDER_QUESTION, "options": NO_CACHE}
        async with gateway(stack, keys) as http:
            first = await http.post(
                "/v1/runs", params={"wait": "true"}, json=body, headers=bearer(STAFF_TOKEN)
            )
            assert first.status_code == 200, first.text
            assert first.json()["result"]["usage"]["total_tokens"] > 100

            refused = await http.post("/v1/runs", json=body, headers=bearer(STAFF_TOKEN))
            assert refused.status_code == 429, refused.text
            assert refused.headers["content-type"] == "application/problem+json"
            problem = refused.json()
            assert problem["type"] == "/problems/budget-exhausted"
            assert (problem["scope"], problem["limit"], problem["window_s"]) == (
                "key",
                "100 tokens",
                3600,
            )
            assert 1 <= int(refused.headers["retry-after"]) == problem["retry_after_s"] <= 3600

            # The budget is the key's: another key of the same tenant still starts runs.
            other = await http.post("/v1/runs", json=body, headers=bearer(OTHER_STAFF_TOKEN))
            assert other.status_code == 202, other.text
            stack.started.append(stack.client.get_workflow_handle(other.json()["workflow_id"]))

        # Counted in Redis, not in a gateway: a fresh client (another process, a restarted
        # gateway) refuses the key's next run by name.
        spent_key = keys.caller(f"Bearer {STAFF_TOKEN}").quota_id
        client = stack.agent_client()
        try:
            with pytest.raises(BudgetExhaustedError) as named:
                await client.start(
                    AgentRequest(question=ORDER_QUESTION, tenant=stack.tenant, usage_key=spent_key)
                )
        finally:
            await client.close()
    assert named.value.type == "BudgetExhausted"
    assert named.value.scope == "key" and named.value.retry_after_s >= 1


async def test_usage_is_counted_per_tenant_and_key_in_windows_and_bounded_metrics(
    redis_url: str,
) -> None:
    deployment = f"t-{uuid.uuid4().hex[:8]}"
    redis = aioredis.from_url(redis_url)
    port = free_port()
    runtime = Runtime(
        telemetry=TelemetryConfig(
            metrics=PrometheusConfig(bind_address=f"127.0.0.1:{port}", counters_total_suffix=True)
        )
    )
    ledger = UsageLedger(redis, deployment, window_s=3600, max_labels=2)
    # Another inference worker of the same deployment: its own client, the same windows.
    other_redis = aioredis.from_url(redis_url)
    other_worker = UsageLedger(other_redis, deployment, window_s=3600)
    used = parse_prices("m=1000:1000").priced(
        RunUsage.of(
            [ModelUsage(tier=Tier.LIGHT, model="m", calls=1, prompt_tokens=40, completion_tokens=2)]
        )
    )
    try:
        for tenant, key in (("a", "k1"), ("a", "k2"), ("b", None), ("c", "k3")):
            await ledger.charge(used, tenant, key, meter=runtime.metric_meter)
        await other_worker.charge(used, "b", None, meter=None)
        budgets = WindowBudgets(
            redis, deployment, WindowLimits(window_s=3600, tokens_per_key=42, usd_per_tenant=0.1)
        )
        # Key k1 has used 42 tokens of 42; tenant a $0.084 of $0.1: the key refuses first.
        with pytest.raises(BudgetExhaustedError) as key_spent:
            await budgets.check(AgentRequest(question="q", tenant="a", usage_key="k1"))
        assert (key_spent.value.scope, key_spent.value.spent) == ("key", "42 tokens")
        assert 1 <= key_spent.value.retry_after_s <= 3600
        # No key: its tenant only ($0.084 of $0.1, counted by both workers).
        await budgets.check(AgentRequest(question="q", tenant="b"))
        await other_worker.charge(used, "b", None, meter=None)
        with pytest.raises(BudgetExhaustedError, match=r"tenant 'b' has used \$0.126000"):
            await budgets.check(AgentRequest(question="q", tenant="b"))
        await ledger.charge(used, "a", "k9", meter=None)  # tenant a: $0.126 now
        with pytest.raises(BudgetExhaustedError) as tenant_spent:
            await budgets.check(AgentRequest(question="q", tenant="a"))
        assert (tenant_spent.value.scope, tenant_spent.value.limit) == ("tenant", "$0.100000")
        # Redis out of reach refuses nothing (the workers' counts cannot be read).
        gone = aioredis.from_url("redis://127.0.0.1:1/0", socket_connect_timeout=0.5)
        await WindowBudgets(gone, deployment, budgets.limits).check(
            AgentRequest(question="q", tenant="a", usage_key="k1")
        )
        await gone.aclose()

        async with httpx.AsyncClient(trust_env=False) as http:
            text = (await http.get(f"http://127.0.0.1:{port}/metrics")).text
        assert (
            'agentkeel_model_cost_micro_usd_total{key="k1",model="m",service_name='
            '"temporal-core-sdk",tenant="a",tier="light"} 42000' in text
        )  # (40 + 2) tokens at $1000 per million
        tokens = {
            line.split("{", 1)[1].split("}", 1)[0]: float(line.rsplit(" ", 1)[1])
            for line in text.splitlines()
            if line.startswith("agentkeel_model_tokens_total{") and 'kind="prompt"' in line
        }
        by_owner = {
            (_label(labels, "tenant"), _label(labels, "key")): value
            for labels, value in tokens.items()
        }
        # Two distinct tenants and keys per process: the third of each counts as `other`.
        assert by_owner == {
            ("a", "k1"): 40,
            ("a", "k2"): 40,
            ("b", "other"): 40,  # `none` would be a third key
            ("other", "other"): 40,
        }
    finally:
        keys = [k async for k in redis.scan_iter(match=f"agentkeel:usage:{{{deployment}}}:*")]
        if keys:
            await redis.delete(*keys)
        await redis.aclose()
        await other_redis.aclose()


def _label(labels: str, name: str) -> str:
    return labels.split(f'{name}="', 1)[1].split('"', 1)[0]
