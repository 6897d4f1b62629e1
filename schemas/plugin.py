"""The one place that decides the data converter and the sandbox pass-throughs.

The graph plugin is added for workers by `workers.temporal_client`; clients that only
start runs need this plugin alone.
"""

from __future__ import annotations

from dataclasses import replace

from temporalio.plugin import SimplePlugin
from temporalio.worker import WorkflowRunner
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner

from agentkeel.schemas.payload_converter import readable_data_converter

PASSTHROUGH_MODULES = (
    "pydantic",  # immutable validation code; re-importing it per run costs ~100 ms
    "pydantic_core",  # compiled core of pydantic
    "agentkeel.schemas",  # pure data models, no I/O; shared by workflows and activities
    # The domain SDK's declarations the workflow consults (roles, patterns, rules), and the
    # registry of the served domain, which must be the process's one, not a per-run copy.
    "agentkeel.sdk",
    # Pure plan checking over schemas; passed through so the TypeAdapter cache in
    # `schemas.plan.arguments` is built once per process, not once per run.
    "agentkeel.schemas.plan.validation",
    "agentkeel.schemas.plan.arguments",
    "agentkeel.schemas.plan.references",
    "opentelemetry",  # process-global tracing API that LangChain imports lazily
    "anyascii",  # transliteration tables (approver names), read-only data
    # The orchestration modules under the workflow definitions: deterministic code with no
    # module-level state that changes (constants and functions only; every run's state
    # lives in objects the run creates). Re-compiling them from source for every new run
    # took about a fifth of the CPU worker under load (`python -m bench.load`: 12.5 -> 15.7
    # runs/s). The modules that define workflows (`workflows.agent`, `workflows.warmer`,
    # `workflows.fan_out_part`) stay sandboxed.
    *(
        f"agentkeel.workflows.{name}"
        for name in (
            "graph",
            "metrics",
            "state",
            "nodes",
            "dag",
            "approvals",
            "cancellation",
            "inputs",
            "outputs",
            "timeouts",
            "visibility",
            "waiting",
        )
    ),
)


def _passthrough(runner: WorkflowRunner | None) -> WorkflowRunner:
    if runner is None:
        raise ValueError("no workflow runner to configure")
    if isinstance(runner, SandboxedWorkflowRunner):
        restrictions = runner.restrictions.with_passthrough_modules(*PASSTHROUGH_MODULES)
        return replace(runner, restrictions=restrictions)
    return runner


def agentkeel_plugin() -> SimplePlugin:
    """The pydantic JSON data converter (unreadable payloads fail at once, see
    `schemas.payload_converter`) and the workflow sandbox's pass-throughs."""
    return SimplePlugin(
        "agentkeel",
        data_converter=readable_data_converter,
        workflow_runner=_passthrough,
    )
