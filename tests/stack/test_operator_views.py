"""`agentkeel stats` and `agentkeel trace` on real runs: the tables operators read."""

from __future__ import annotations

import argparse
import asyncio
import json
from datetime import timedelta
from typing import Any

import pytest
import redis.asyncio as aioredis

from agentkeel.cli.operate import run_operator
from agentkeel.client.stats import RunStats, format_stats, run_stats
from agentkeel.client.trace import format_waterfall, run_waterfall
from agentkeel.schemas.request import AgentRequest
from agentkeel.schemas.result import CacheStatus
from tests.support.agent_stack import AgentStack, StackFactory
from tests.support.plans import KB_QUESTION


async def test_stats_reads_layers_cache_and_slowest_runs_from_the_run_records(
    stack: AgentStack,
) -> None:
    first = await stack.ask("Where is order 1001?")
    await stack.ask("What is your return policy?")
    # Found again in the cache: whole (exact), or its plan (when the knowledge base's
    # result it was built from was served stale by another test's run, it is not whole).
    again = await stack.ask("What is your return policy?")
    database_url = stack.settings.database_url
    assert database_url is not None
    stats = await run_stats(database_url, since=timedelta(hours=1), tenant=stack.tenant)
    assert stats.runs == 3
    layers = {row.layer: row for row in stats.layers}
    assert set(layers) == {"cache", "route", "plan", "tools", "respond", "orchestration", "total"}
    assert layers["total"].share == 1.0
    parts = sum(row.share for name, row in layers.items() if name != "total")
    assert abs(parts - 1.0) < 1e-6, "the layers and the orchestration add up to the total"
    assert layers["tools"].p50_ms > 0 and layers["total"].p99_ms >= layers["total"].p50_ms
    assert stats.cache == {"miss": 2, again.cache.value: 1}
    assert again.cache.value in ("exact", "plan")
    assert stats.slowest[0].total_ms >= stats.slowest[-1].total_ms
    assert first.workflow_id in {run.workflow_id for run in stats.slowest}
    text = format_stats(stats)
    assert "3 runs in the last 1h" in text
    assert f"cache hit ratio 33% ({again.cache.value} 33%)" in text
    empty = await run_stats(database_url, since=timedelta(hours=1), tenant="nobody-here")
    assert empty.runs == 0 and "no runs recorded" in format_stats(empty)


async def test_stats_counts_the_client_fast_paths_hits_which_leave_no_run(
    stack: AgentStack,
) -> None:
    await stack.ask(KB_QUESTION)
    agents = stack.agent_client()
    try:
        for _ in range(3):
            hit = await agents.ask(AgentRequest(question=KB_QUESTION, tenant=stack.tenant))
            assert hit.cache == CacheStatus.EXACT and hit.workflow_id == ""
    finally:
        await agents.close()
    database_url, redis_url = stack.settings.database_url, stack.settings.redis_url
    assert database_url is not None and redis_url is not None
    redis = aioredis.from_url(redis_url)
    try:
        ns, queue, hour = stack.settings.temporal_namespace, stack.task_queue, timedelta(hours=1)

        async def stats_of(tenant: str) -> RunStats:
            return await run_stats(
                database_url, since=hour, tenant=tenant, redis=redis, namespace=ns, task_queue=queue
            )

        stats, other = await stats_of(stack.tenant), await stats_of("nobody-here")
    finally:
        await redis.aclose()
    assert stats.runs == 1 and stats.cache == {"miss": 1, "fast_path": 3}
    text = format_stats(stats)
    assert "1 runs in the last 1h (tenant " in text
    assert "3 answered by the client fast path, with no run" in text
    assert "cache hit ratio 75% (fast path 75%)" in text
    assert other.cache == {}, "another tenant's hits are its own"


async def test_trace_draws_the_run_with_queue_waits_apart_from_execution(
    make_stack: StackFactory,
) -> None:
    # The tools on the task queue, so that each has a queue wait to draw (a local read
    # has none: it runs in the worker that holds the workflow task).
    stack = await make_stack(local_tools="off")
    handle = await stack.start("Where is order 1001?")
    result = await handle.result()
    waterfall = run_waterfall(await handle.fetch_history())
    assert waterfall.outcome == "completed"
    labels = [span.label for span in waterfall.spans]
    assert any(label.startswith("get_order") for label in labels)
    assert any(label.startswith("track_shipment") for label in labels)
    assert "local_route (local)" in labels and "store (local)" in labels
    tools = [s for s in waterfall.spans if s.label.startswith(("get_order", "track_shipment"))]
    order, tracking = sorted(tools, key=lambda s: s.start_ms)
    assert tracking.start_ms >= order.start_ms + order.queued_ms + order.ran_ms - 1.0
    assert all(s.queued_ms >= 0 and s.ran_ms >= 0 for s in waterfall.spans)
    assert abs(waterfall.total_ms - result.timings_ms.total) < 200
    text = format_waterfall(waterfall, width=40)
    assert f"{handle.id}: completed in" in text
    assert "queue " + stack.settings.task_queue in text


async def test_runs_are_listed_by_question_and_found_by_tenant_in_the_web_ui(
    stack: AgentStack,
) -> None:
    client = stack.agent_client()
    question = "Where is order 1001?   I have been waiting " + "for a long time " * 8
    request = AgentRequest(question=question, tenant=stack.tenant, conversation_id="c-1")
    handle = await client.start(request, coalesce=False)
    await handle.result()
    described = await handle.describe()
    summary = await described.static_summary()
    assert summary is not None and summary.startswith("Where is order 1001? I have been")
    assert len(summary) == 80 and summary.endswith("…")
    details = await described.static_details() or ""
    assert f"**tenant** {stack.tenant}" in details and "**conversation** c-1" in details
    found: list[str] = []
    for _ in range(50):  # visibility is eventually consistent
        found = [w.id async for w in stack.client.list_workflows(f'AgentTenant = "{stack.tenant}"')]
        if handle.id in found:
            break
        await asyncio.sleep(0.1)
    assert handle.id in found


async def test_trace_names_every_run_of_a_reused_workflow_id_and_draws_them_all(
    stack: AgentStack, capsys: pytest.CaptureFixture[str]
) -> None:
    # A question asked twice, one run after the other, through the client's coalescing
    # id: one workflow id, two runs (as `agentkeel ask` gets when asked again).
    agents = stack.agent_client()
    request = AgentRequest(question="Where is order 1001?", tenant=stack.tenant)
    try:
        first = await agents.start(request)
        await first.result()
        second = await agents.start(request)
        await second.result()
    finally:
        await agents.close()
    assert first.id == second.id and first.result_run_id != second.result_run_id
    trace = {"workflow_id": first.id, "run_id": None, "width": 40, "json": False, "all": False}
    address = stack.client.service_client.config.target_host
    settings = stack.settings.model_copy(update={"temporal_address": address})
    for _ in range(50):  # visibility lists a run a moment after it closes
        assert await run_operator(settings, _args("trace", **trace)) == 0
        latest = capsys.readouterr()
        if "has 2 runs" in latest.err:
            break
        await asyncio.sleep(0.1)
    assert f"{first.id} has 2 runs; this is the latest, {second.result_run_id}" in latest.err
    assert f"the others: {first.result_run_id} (started " in latest.err
    assert "`--run-id RUN` draws one, `--all` every one" in latest.err
    assert latest.out.count(f"{first.id}: completed in") == 1

    assert await run_operator(settings, _args("trace", **(trace | {"all": True}))) == 0
    every = capsys.readouterr().out
    assert every.index(f"run {first.result_run_id}:") < every.index(f"run {second.result_run_id}:")
    assert every.count(f"{first.id}: completed in") == 2
    shown = trace | {"all": True, "json": True}
    assert await run_operator(settings, _args("trace", **shown)) == 0
    spans = json.loads(capsys.readouterr().out)
    assert [s["run_id"] for s in spans] == [first.result_run_id, second.result_run_id]


def _args(command: str, **values: Any) -> argparse.Namespace:
    return argparse.Namespace(command=command, **values)
