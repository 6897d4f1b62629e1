"""What every system of `bench.peers` shares besides the model server: the tools' bodies.

Each system's tools are real tools of that system (agentkeel's `agentkeel.tool` functions,
each peer's activities), and each runs the same body: log the call under the workflow
that made it, sleep the tool time, return `bench.peer_cases.result_of`. A run can then be
checked to have called exactly the tools its question needs.
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from temporalio import activity
from temporalio.client import Client
from temporalio.exceptions import ActivityError, ApplicationError, FailureError
from temporalio.worker import UnsandboxedWorkflowRunner, Worker, WorkflowRunner
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner

from bench.peer_cases import TOOL_ARGS, NoSuchOrder, canonical, expected_calls, result_of

ANSWER = "Here is what the tools found."
"""A tool-calling model's final answer: its content does not matter, only that it is one
turn (or none, where the framework lets the answer go with the last tool calls)."""


@dataclass
class Knobs:
    """The benchmark's dials, read by the tools at call time (one process, so one object)."""

    tool_s: float = 0.1
    """Sleep of every tool call."""


KNOBS = Knobs()


@dataclass
class ToolLog:
    """Tool calls by the workflow id that made them."""

    calls: dict[str, list[tuple[str, dict[str, Any]]]] = field(
        default_factory=lambda: defaultdict(list)
    )

    def record(self, tool: str, args: Mapping[str, Any]) -> None:
        """Called from inside the tool's activity; keeps the arguments a model chooses."""
        chosen = {k: args[k] for k in TOOL_ARGS[tool] if k in args}
        self.calls[activity.info().workflow_id or "?"].append((tool, chosen))

    def of(self, workflow_id: str) -> list[tuple[str, dict[str, Any]]]:
        """(tool, arguments) of each call the workflow made, in the order they started."""
        return list(self.calls.get(workflow_id, []))


TOOL_LOG = ToolLog()


class WrongToolCalls(RuntimeError):
    """A run finished without making exactly the tool calls its question needs."""


def check_calls(question: str, workflow_id: str) -> None:
    """Raises unless the run made exactly the tool calls of `question`, with their arguments."""
    made = canonical(TOOL_LOG.of(workflow_id))
    if made != expected_calls(question):
        raise WrongToolCalls(f"{workflow_id} ({question}) called {made}")


NOT_FOUND = "NotFound"


async def run_tool(tool: str, args: Mapping[str, Any]) -> dict[str, Any]:
    """The body of every system's tool: log, sleep, return the case's result. A lookup of
    an order that exists nowhere raises Temporal's own non-retryable error (what
    `agentkeel.not_found` raises too); each peer's tool hands it to its model the way its
    framework does."""
    TOOL_LOG.record(tool, args)
    await asyncio.sleep(KNOBS.tool_s)
    try:
        return result_of(tool, args)
    except NoSuchOrder as missing:
        raise ApplicationError(str(missing), type=NOT_FOUND, non_retryable=True) from None


def inline_worker(
    client: Client, task_queue: str, workflow: type, activities: Sequence[Callable[..., Any]]
) -> Worker:
    """A peer's worker as every system of the benchmark runs one: unsandboxed, its
    activations inline on the event loop (`debug_mode`), as agentkeel's worker runs them."""
    return Worker(
        client,
        task_queue=task_queue,
        workflows=[workflow],
        activities=list(activities),
        workflow_runner=UnsandboxedWorkflowRunner(),
        debug_mode=True,
    )


def workflow_runner(sandboxed: bool) -> WorkflowRunner:
    """A peer worker's runner: Temporal's default sandbox (each framework's plugin adds its
    pass-throughs), or none."""
    return SandboxedWorkflowRunner() if sandboxed else UnsandboxedWorkflowRunner()


def tool_failure(failed: FailureError) -> BaseException:
    """The tool's own error of a failed tool activity: an `ActivityError`'s cause (a local
    activity's failure reaches the workflow bare, as the error itself)."""
    return (failed.cause if isinstance(failed, ActivityError) else None) or failed
