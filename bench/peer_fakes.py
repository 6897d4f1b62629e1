"""What every system of `bench.peers` shares: the ideal model at the boundary, and the tools.

The fake model of each peer asks this module for its next round: every step of the shape
whose dependencies have returned and which has not run yet, with its `$ref` arguments
resolved against the tool results the model has seen. That is the best any framework
that puts a model turn between dependent tool calls can do: one turn per level of the
plan (all independent calls of a level in one response), then one turn with the answer.

The tools are the shop's catalog tools under their real names, each a real activity of
its system that sleeps the stated latency and returns the same result as the stand-ins
of `bench.fakes`. Every call is logged under the workflow that made it, so a run can be
checked to have called exactly the tools its shape needs.
"""

from __future__ import annotations

import asyncio
import json
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from temporalio import activity
from temporalio.worker import UnsandboxedWorkflowRunner, WorkflowRunner
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner

from agentkeel.workflows.dag.resolve import resolve
from bench.dag_shapes import Shape, question_for, shape_named_in
from bench.fakes import stand_in_result

ANSWER = "Here is what the tools found."
"""The fake models' final answer: the content does not matter, only that it is one turn."""


@dataclass
class Knobs:
    """The benchmark's dials, read by the fakes at call time (one process, so one object)."""

    model_s: float = 0.0
    """Sleep of every fake model call: a stand-in for decode time."""
    tool_s: float = 0.1
    """Sleep of every tool call."""


KNOBS = Knobs()

MODEL_ARGS = {
    "search_kb": ("query",),
    "get_order": ("order_id",),
    "check_inventory": ("sku",),
    "track_shipment": ("tracking_number",),
}
"""Per tool of the shapes, the arguments a model chooses (agentkeel's tool inputs also carry
the tenant, the actor and the call id, which the workflow adds)."""


@dataclass(frozen=True)
class Call:
    """One tool call of a round: the step id doubles as the model's tool-call id."""

    step_id: str
    tool: str
    args: dict[str, Any]


@dataclass
class ToolLog:
    """Tool calls by the workflow id that made them."""

    calls: dict[str, list[tuple[str, dict[str, Any]]]] = field(
        default_factory=lambda: defaultdict(list)
    )

    def record(self, tool: str, args: Mapping[str, Any]) -> None:
        """Called from inside the tool's activity; keeps the arguments a model chooses."""
        chosen = {k: args[k] for k in MODEL_ARGS[tool] if k in args}
        self.calls[activity.info().workflow_id or "?"].append((tool, chosen))

    def of(self, workflow_id: str) -> list[tuple[str, dict[str, Any]]]:
        """(tool, arguments) of each call the workflow made, in the order they started."""
        return list(self.calls.get(workflow_id, []))


TOOL_LOG = ToolLog()


def next_round(question: str, outputs: Mapping[str, Any]) -> list[Call]:
    """The calls the ideal model makes after seeing `outputs` (step id -> tool result);
    empty once every step has returned: then it answers."""
    return next_round_of(shape_named_in(question), outputs)


def next_round_of(shape: Shape, outputs: Mapping[str, Any]) -> list[Call]:
    """`next_round` for a shape already known."""
    ready = [
        step
        for step in shape.plan.steps
        if step.id not in outputs and all(d in outputs for d in shape.deps[step.id])
    ]
    return [Call(s.id, s.tool, resolved_args(s.args, outputs)) for s in ready]


def resolved_args(args: Mapping[str, Any], outputs: Mapping[str, Any]) -> dict[str, Any]:
    """A step's arguments with every `$step.path` replaced by what it points at."""
    return dict(resolve(dict(args), outputs))


def expected_calls(shape: Shape) -> list[str]:
    """The tool calls a correct run of `shape` makes, canonical and sorted (see `canonical`)."""
    outputs: dict[str, Any] = {}
    made: list[tuple[str, dict[str, Any]]] = []
    while calls := next_round(question_for(shape, 0), outputs):
        for c in calls:
            made.append((c.tool, c.args))
            outputs[c.step_id] = stand_in_result(c.tool, c.args).model_dump(mode="json")
    return canonical(made)


def canonical(calls: list[tuple[str, dict[str, Any]]]) -> list[str]:
    """(tool, arguments) pairs as sorted JSON text: equal for the same calls in any order."""
    return sorted(json.dumps([tool, args], sort_keys=True) for tool, args in calls)


def as_output(content: Any) -> Any:
    """A tool result as the model sees it (some frameworks hand it back as JSON text)."""
    if isinstance(content, str):
        try:
            return json.loads(content)
        except json.JSONDecodeError:
            return content
    return content


async def model_turn() -> None:
    """The decode time of one fake model call."""
    if KNOBS.model_s > 0:
        await asyncio.sleep(KNOBS.model_s)


async def run_tool(tool: str, args: Mapping[str, Any]) -> dict[str, Any]:
    """The body of every peer's tool activity: log, sleep, return a valid result."""
    TOOL_LOG.record(tool, args)
    await asyncio.sleep(KNOBS.tool_s)
    return stand_in_result(tool, dict(args)).model_dump(mode="json")


def workflow_runner(sandboxed: bool) -> WorkflowRunner:
    """A peer worker's runner: Temporal's default sandbox (each framework's plugin adds its
    pass-throughs), or none."""
    return SandboxedWorkflowRunner() if sandboxed else UnsandboxedWorkflowRunner()
