"""The one place that decides the data converter and the sandbox pass-throughs.

The graph plugin is added for workers by `workers.temporal_client`; clients that only
start runs need this plugin alone.
"""

from __future__ import annotations

from dataclasses import replace

from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.plugin import SimplePlugin
from temporalio.worker import WorkflowRunner
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner

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


def agentkeel_plugin() -> SimplePlugin:
    """The pydantic JSON data converter and the workflow sandbox's pass-throughs."""
    return SimplePlugin(
        "agentkeel",
        data_converter=pydantic_data_converter,
        workflow_runner=_passthrough,
    )
