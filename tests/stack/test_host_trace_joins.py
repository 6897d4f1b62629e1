"""A service with a tracer provider of its own starts a run through `AgentClient`: the run's
`StartWorkflow` span is a child of the service's own request span, in the service's trace,
exported by the service's provider (agentkeel installed none). A fresh process: a global
tracer provider can be set once per process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid

from temporalio.testing import WorkflowEnvironment

from tests.support.paths import ROOT

PROBE = """
import asyncio, json, sys
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

exporter = InMemorySpanExporter()
host = TracerProvider()
host.add_span_processor(SimpleSpanProcessor(exporter))
trace.set_tracer_provider(host)

import agentkeel

async def main():
    settings = agentkeel.Settings(temporal_address=sys.argv[1], temporal_namespace=sys.argv[2],
                                  task_queue=sys.argv[3])
    client = await agentkeel.AgentClient.connect(settings)
    with trace.get_tracer("host-service").start_as_current_span("POST /orders/help") as request:
        handle = await client.start(agentkeel.AgentRequest(question="Where is order 1001?"))
    await handle.terminate(reason="only the start was traced")
    assert trace.get_tracer_provider() is host
    spans = {s.name: s for s in exporter.get_finished_spans()}
    start = spans["StartWorkflow:AgentWorkflow"]
    print(json.dumps({
        "same_trace": start.context.trace_id == request.get_span_context().trace_id,
        "parent": start.parent.span_id == request.get_span_context().span_id,
    }))

asyncio.run(main())
sys.stdout.flush()
# Leave without the interpreter's teardown: the SDK's Rust runtime thread may still call
# into Python while it tears down, which can abort the process after the probe is done.
import os
os._exit(0)
"""


def test_a_run_started_by_a_traced_service_continues_its_trace(
    temporal_env: WorkflowEnvironment,
) -> None:
    client = temporal_env.client
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "AGENTKEEL_"))}
    env["PYTHONPATH"] = str(ROOT)
    queue = f"host-trace-{uuid.uuid4().hex[:8]}"  # nobody polls it: only the start counts
    done = subprocess.run(
        [sys.executable, "-c", PROBE, client.service_client.config.target_host,
         client.namespace, queue],
        capture_output=True, text=True, env=env, cwd=ROOT, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen == {"same_trace": True, "parent": True}
