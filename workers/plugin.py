"""The one place that decides the data converter, sandbox pass-throughs and the graph plugin."""

from __future__ import annotations

from dataclasses import replace

from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.langgraph import LangGraphPlugin
from temporalio.plugin import SimplePlugin
from temporalio.worker import WorkflowRunner
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner

from workflows.graph import AGENT_GRAPH, build_agent_graph

PASSTHROUGH_MODULES = (
    "pydantic",  # immutable validation code; re-importing it per run costs ~100 ms
    "pydantic_core",  # compiled core of pydantic
    "schemas",  # pure data models, no I/O; shared by workflows and activities
    # Pure plan checking over schemas; passed through so the TypeAdapter cache in
    # `schemas.plan.arguments` is built once per process, not once per run.
    "schemas.plan.validation",
    "schemas.plan.arguments",
    "schemas.plan.references",
    "opentelemetry",  # process-global tracing API that LangChain imports lazily
)


def _passthrough(runner: WorkflowRunner | None) -> WorkflowRunner:
    if runner is None:
        raise ValueError("no workflow runner to configure")
    if isinstance(runner, SandboxedWorkflowRunner):
        restrictions = runner.restrictions.with_passthrough_modules(*PASSTHROUGH_MODULES)
        return replace(runner, restrictions=restrictions)
    return runner


def agentkeel_plugins() -> list[SimplePlugin]:
    """Plugins for the client (and every worker built from it)."""
    return [
        SimplePlugin(
            "agentkeel",
            data_converter=pydantic_data_converter,
            workflow_runner=_passthrough,
        ),
        LangGraphPlugin(graphs={AGENT_GRAPH: build_agent_graph()}),
    ]
