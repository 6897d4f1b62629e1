"""Each worker of the local stack serves Prometheus metrics: the Temporal SDK's and the
project's own, counted from real runs."""

from __future__ import annotations

import re

import httpx
from temporalio.client import Client

from agentkeel.cli.stack.local import StackEndpoints
from agentkeel.schemas.request import AgentRequest, RunOptions
from agentkeel.settings.model import Settings
from agentkeel.workers.temporal_client import agentkeel_plugins
from agentkeel.workflows.agent import AgentWorkflow
from tests.support.local_stack import running as running  # the whole local stack


def _series(text: str, name: str, **labels: str) -> float:
    """The sum of the samples of `name` whose labels include `labels`."""
    total = 0.0
    for line in text.splitlines():
        m = re.match(rf"{re.escape(name)}(?:\{{([^}}]*)\}})? (\S+)$", line)
        if m is None:
            continue
        have = dict(re.findall(r'(\w+)="([^"]*)"', m.group(1) or ""))
        if all(have.get(k) == v for k, v in labels.items()):
            total += float(m.group(2))
    return total


async def test_workers_serve_layer_cache_router_and_tool_metrics(
    running: tuple[Settings, StackEndpoints],
) -> None:
    settings, endpoints = running
    assert set(endpoints.metrics) == {"worker cpu", "worker inference"}
    client = await Client.connect(endpoints.temporal_address, plugins=agentkeel_plugins())
    questions = ["Where is order 1001?", "Is SKU-00001 in stock?", "Where is order 1001?"]
    for n, question in enumerate(questions):
        await client.execute_workflow(
            AgentWorkflow.run,
            AgentRequest(question=question, tenant="default", options=RunOptions()),
            id=f"metrics-{n}",
            task_queue=settings.task_queue,
        )
    async with httpx.AsyncClient(trust_env=False) as http:
        cpu = (await http.get(endpoints.metrics["worker cpu"])).text
        inference = await http.get(endpoints.metrics["worker inference"])
    assert inference.status_code == 200 and "temporal_" in inference.text
    # One layer histogram sample per finished run and layer.
    assert _series(cpu, "agentkeel_layer_duration_seconds_count", layer="total") == 3
    # A layer a run did not go through is not recorded: the plan hit skipped routing.
    assert _series(cpu, "agentkeel_layer_duration_seconds_count", layer="route") == 2
    assert _series(cpu, "agentkeel_layer_duration_seconds_count", layer="tools") == 3
    assert _series(cpu, "agentkeel_layer_duration_seconds_bucket", layer="total", le="+Inf") == 3
    # Two misses, then the repeated question's plan reused (tracking is never cached whole).
    assert _series(cpu, "agentkeel_cache_lookups_total", outcome="miss") == 2
    assert _series(cpu, "agentkeel_cache_lookups_total", tier="plan", outcome="hit") == 1
    # The rules policy routes on the CPU worker: one decision per run that was not a hit.
    assert _series(cpu, "agentkeel_router_decisions_total", tier="rules") == 2
    assert _series(cpu, "agentkeel_tool_calls_total", tool="get_order", outcome="succeeded") == 2
    assert _series(cpu, "agentkeel_tool_calls_total", tool="check_inventory") == 1
    # And the SDK's own.
    assert _series(cpu, "temporal_workflow_completed_total") >= 3
