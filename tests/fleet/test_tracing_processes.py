"""One trace across processes: the client and both workers of a local stack, the workers
printing their spans into their logs."""

from __future__ import annotations

import asyncio
import json
import uuid
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from temporalio.client import Client

from agentkeel.cli.stack.local import LocalStack, embedded_settings
from agentkeel.schemas.request import AgentRequest
from agentkeel.settings.tracing import tracing_plugins
from agentkeel.workers.temporal_client import agentkeel_plugins
from agentkeel.workflows.agent import AgentWorkflow
from tests.support.tracing import spans as spans


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
