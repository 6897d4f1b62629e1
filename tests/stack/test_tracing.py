"""One run is one trace: client, CPU worker and inference worker spans, parented through
Temporal's OpenTelemetry plugin, with the attributes a trace reader needs."""

from __future__ import annotations

import random

import asyncpg
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from temporalio.client import Client
from temporalio.testing import WorkflowEnvironment

from agentkeel.settings.tracing import tracing_plugins
from agentkeel.workers.temporal_client import agentkeel_plugins
from tests.support.agent_stack import StackFactory
from tests.support.tracing import spans as spans


def _ancestors(span: ReadableSpan, by_id: dict[int, ReadableSpan]) -> list[str]:
    names = []
    while span.parent is not None and span.parent.span_id in by_id:
        span = by_id[span.parent.span_id]
        names.append(span.name)
    return names


async def test_one_run_is_one_trace_across_client_cpu_and_inference_workers(
    temporal_env: WorkflowEnvironment,
    make_stack: StackFactory,
    spans: InMemorySpanExporter,
    db: asyncpg.Pool,
) -> None:
    traced = await Client.connect(
        temporal_env.client.service_client.config.target_host,
        namespace=temporal_env.client.namespace,
        plugins=[*agentkeel_plugins(), *tracing_plugins()],
    )
    # Model steps on the inference worker (as with a model), so the trace crosses to it.
    stack = await make_stack(on=traced, local_policy="off")
    # A shipped order, so the plan's tracking step runs (it is skipped without a parcel); a
    # random one, so no earlier run's cached answer short-circuits the tools.
    rows = await db.fetch("SELECT order_id FROM shipments WHERE tenant = $1", stack.tenant)
    shipped = [row["order_id"] for row in rows]
    handle = await stack.start(f"Where is order {random.choice(shipped)}?")
    await handle.result()
    finished = list(spans.get_finished_spans())
    run = [
        s for s in finished if s.attributes and s.attributes.get("temporalWorkflowID") == handle.id
    ]
    assert run, "no span of the run"
    trace_ids = {s.context.trace_id for s in run}
    assert len(trace_ids) == 1, "one run, one trace"
    mine = [s for s in finished if s.context.trace_id in trace_ids]
    by_id = {s.context.span_id: s for s in mine}
    names = {s.name for s in mine}
    # The client's start, the CPU worker's workflow and tools, the inference worker's model.
    assert "StartWorkflow:AgentWorkflow" in names
    assert "RunActivity:get_order" in names and "RunActivity:route" in names
    assert {"agent.route", "agent.execute", "agent.respond"} <= names
    tool = next(s for s in mine if s.name == "RunActivity:get_order")
    assert tool.attributes is not None
    assert tool.attributes["agentkeel.tool"] == "get_order"
    # The order the question names is read speculatively, before any plan named a step.
    assert "agentkeel.step_id" not in tool.attributes
    tracking = next(s for s in mine if s.name == "RunActivity:track_shipment")
    assert tracking.attributes is not None and tracking.attributes["agentkeel.step_id"] == "s2"
    assert tool.attributes["agentkeel.attempt"] == 1
    assert isinstance(tool.attributes["agentkeel.cache_hit"], bool)
    assert "StartWorkflow:AgentWorkflow" in _ancestors(tool, by_id)
    route = next(s for s in mine if s.name == "RunActivity:route")
    assert route.attributes is not None and route.attributes["agentkeel.tier"] == "rules"
    assert "agent.route" in _ancestors(route, by_id), "the model call is the route node's child"
    lookup = next(s for s in mine if s.name == "RunActivity:lookup_cache")
    assert lookup.attributes is not None and lookup.attributes["agentkeel.cache_hit"] is False
    assert lookup.attributes["agentkeel.cache_status"] == "miss"
    # asyncpg, Redis and HTTP calls are children of the activities that made them.
    children = {
        s.name.split()[0] for s in mine if s.parent and s.parent.span_id == tool.context.span_id
    }
    assert children, f"no library span under get_order: {sorted(names)}"
