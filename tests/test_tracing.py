"""One run is one trace: client, CPU worker and inference worker spans, parented through
Temporal's OpenTelemetry plugin, with the attributes a trace reader needs."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from temporalio.client import Client
from temporalio.testing import WorkflowEnvironment

from agentkeel.cli.stack.local import LocalStack, embedded_settings
from agentkeel.inference.llm.policy import LlmPolicy
from agentkeel.schemas.model_calls import RespondInput, RouteInput
from agentkeel.schemas.request import AgentRequest
from agentkeel.schemas.route import Route, Tier
from agentkeel.settings.tracing import (
    configure_tracing,
    stop_tracing,
    tracing_plugins,
    tracing_requested,
)
from agentkeel.workers.temporal_client import agentkeel_plugins
from agentkeel.workflows.agent import AgentWorkflow
from tests.support.agent_stack import StackFactory
from tests.support.fakes import FakeEngine
from tests.support.plans import GOOD_PLAN


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    configure_tracing("agentkeel-test", processor=SimpleSpanProcessor(exporter))
    try:
        yield exporter
    finally:
        stop_tracing()
        exporter.shutdown()


def _ancestors(span: ReadableSpan, by_id: dict[int, ReadableSpan]) -> list[str]:
    names = []
    while span.parent is not None and span.parent.span_id in by_id:
        span = by_id[span.parent.span_id]
        names.append(span.name)
    return names


async def test_one_run_is_one_trace_across_client_cpu_and_inference_workers(
    temporal_env: WorkflowEnvironment, make_stack: StackFactory, spans: InMemorySpanExporter
) -> None:
    traced = await Client.connect(
        temporal_env.client.service_client.config.target_host,
        namespace=temporal_env.client.namespace,
        plugins=[*agentkeel_plugins(), *tracing_plugins()],
    )
    # Model steps on the inference worker (as with a model), so the trace crosses to it.
    stack = await make_stack(on=traced, local_policy="off")
    handle = await stack.start(f"Where is order {1001 + uuid.uuid4().int % 140}?")
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
    assert tool.attributes["agentkeel.step_id"] == "s1"
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


def test_nothing_is_traced_without_an_exporter_configured() -> None:
    assert not tracing_requested({})
    assert not tracing_requested({"OTEL_SERVICE_NAME": "x"})
    assert tracing_requested({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"})
    assert not tracing_requested(
        {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", "OTEL_SDK_DISABLED": "true"}
    )
    assert not tracing_requested({"OTEL_TRACES_EXPORTER": "none"})


async def test_each_model_call_is_an_event_with_engine_tier_tokens_and_time() -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()  # a provider of this test's own: the global one is untouched
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    engine = FakeEngine(label_probs={"order_status": 0.9, "refund": 0.1}, documents=[GOOD_PLAN])
    policy = LlmPolicy(engine, tier=Tier.LIGHT, threshold=0.7)
    with provider.get_tracer("test").start_as_current_span("RunActivity:route"):
        await policy.route(RouteInput(question="Where is order 1002?"))
        await policy.respond(
            RespondInput(
                question="Where is order 1002?",
                route=Route(intent="order_status", confidence=0.9, tier=Tier.LIGHT),
                steps=[],
            )
        )
    [span] = exporter.get_finished_spans()
    events = [dict(e.attributes or {}) for e in span.events if e.name == "model call"]
    assert len(events) == 3, "the label, the draft plan and the answer"
    assert {e["agentkeel.engine"] for e in events} == {engine.name}
    assert {e["agentkeel.tier"] for e in events} == {"light"}
    assert all("agentkeel.output_tokens" in e for e in events)
    assert "agentkeel.ttft_ms" in events[-1] and "agentkeel.ms" in events[0]


def _printed_spans(log: Path) -> list[dict[str, Any]]:
    """The spans a worker printed (`OTEL_TRACES_EXPORTER=console`: indented JSON objects
    between its one-line log records)."""
    found, block = [], []
    for line in log.read_text(errors="replace").splitlines():
        if line == "{":
            block = [line]
        elif block:
            block.append(line)
            if line == "}":
                found.append(json.loads("\n".join(block)))
                block = []
    return found


async def test_one_trace_crosses_the_client_and_both_worker_processes(
    stack_dir: Path, monkeypatch: pytest.MonkeyPatch, spans: InMemorySpanExporter
) -> None:
    # The workers (child processes) print their spans into their logs, promptly.
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "console")
    monkeypatch.setenv("OTEL_BSP_SCHEDULE_DELAY", "100")
    settings = embedded_settings(
        stack_dir,
        metrics_address="off",
        local_policy="off",  # route on the inference worker, as with a model
    )
    async with LocalStack(settings, start_workers=True) as endpoints:
        client = await Client.connect(
            endpoints.temporal_address, plugins=[*agentkeel_plugins(), *tracing_plugins()]
        )
        handle = await client.start_workflow(
            AgentWorkflow.run,
            AgentRequest(question="Where is order 1001?", tenant="default"),
            id=f"traced-{uuid.uuid4().hex[:8]}",
            task_queue=settings.task_queue,
        )
        await handle.result()
        [start] = [
            s
            for s in spans.get_finished_spans()
            if s.name == "StartWorkflow:AgentWorkflow"
            and (s.attributes or {}).get("temporalWorkflowID") == handle.id
        ]
        trace_id = f"0x{start.context.trace_id:032x}"
        logs = Path(endpoints.log_dir)
        cpu: list[dict[str, Any]] = []
        inference: list[dict[str, Any]] = []
        for _ in range(50):  # until both workers' batches are printed
            await asyncio.sleep(0.1)
            cpu = [s for s in _printed_spans(logs / "worker-cpu.log")
                   if s["context"]["trace_id"] == trace_id]  # fmt: skip
            inference = [s for s in _printed_spans(logs / "worker-inference.log")
                         if s["context"]["trace_id"] == trace_id]  # fmt: skip
            if any(s["name"] == "RunActivity:route" for s in inference) and any(
                s["name"] == "RunActivity:get_order" for s in cpu
            ):
                break
    names = {s["name"] for s in cpu}
    assert {"RunWorkflow:AgentWorkflow", "agent.route", "RunActivity:get_order"} <= names
    route = next(s for s in inference if s["name"] == "RunActivity:route")
    # Its parent is the CPU worker's span that scheduled it: one trace, three processes.
    parents = {s["context"]["span_id"]: s["name"] for s in cpu}
    assert parents.get(route["parent_id"]) == "StartActivity:route"
    assert route["resource"]["attributes"]["service.name"] == "agentkeel-worker-inference"
