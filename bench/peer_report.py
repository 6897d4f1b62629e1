"""What `bench.peers` counts and prints: per run the end-to-end time, per cell the history
of one run (events, activity tasks, workflow tasks, local activities), and the tables,
each peer as a ratio of agentkeel measured in the same invocation."""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from temporalio.api.enums.v1 import EventType
from temporalio.client import WorkflowHandle

AGENTKEEL = "agentkeel"
FRAMEWORKS = ("pydantic-ai", "openai-agents")
BARE = "bare"
PEERS = (*FRAMEWORKS, BARE)
SYSTEMS = (AGENTKEEL, *PEERS)


@dataclass(frozen=True)
class HistoryStats:
    """One run's history: what Temporal recorded and dispatched for it."""

    events: int
    activity_tasks: int
    """Activities scheduled (each a task on a queue, polled by a worker)."""
    workflow_tasks: int
    """Workflow tasks completed: each a round trip of the workflow to its worker."""
    local_activities: int
    model_stages: int
    """Activities on a queue that are not tool calls: the model turns the run waited for
    (agentkeel's route carries the plan made beside it: one stage for two calls)."""


async def history_stats(handle: WorkflowHandle[Any, Any]) -> HistoryStats:
    events = (await handle.fetch_history()).events
    kinds = [e.event_type for e in events]
    local = sum(
        1
        for e in events
        if e.event_type == EventType.EVENT_TYPE_MARKER_RECORDED
        and e.marker_recorded_event_attributes.marker_name == "core_local_activity"
    )
    scheduled = [
        e.activity_task_scheduled_event_attributes.activity_type.name
        for e in events
        if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
    ]
    return HistoryStats(
        events=len(events),
        activity_tasks=len(scheduled),
        workflow_tasks=kinds.count(EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED),
        local_activities=local,
        model_stages=sum(1 for name in scheduled if _is_model_call(name)),
    )


_MODEL_ACTIVITIES = frozenset({"route", "plan", "join", "respond", "bench_peer_bare_plan"})


def _is_model_call(activity_type: str) -> bool:
    """agentkeel's policy steps and bare's, Pydantic AI's `<agent>__model_request` and the
    OpenAI Agents integration's `invoke_model_activity`."""
    return activity_type in _MODEL_ACTIVITIES or "model" in activity_type


@dataclass
class Cell:
    """One system (and sandbox mode) on one shape at one model time."""

    e2e_ms: list[float] = field(default_factory=list)
    history: HistoryStats | None = None

    @property
    def median(self) -> float:
        return statistics.median(self.e2e_ms)

    @property
    def p90(self) -> float:
        """Nearest-rank 90th percentile (the largest sample below ten runs)."""
        ordered = sorted(self.e2e_ms)
        return ordered[max(0, math.ceil(0.9 * len(ordered)) - 1)]


Key = tuple[int, str, str]
"""(model ms per call, shape name, variant label)."""


@dataclass
class Results:
    cells: dict[Key, Cell] = field(default_factory=lambda: defaultdict(Cell))

    def cell(self, model_ms: int, shape: str, label: str) -> Cell:
        return self.cells[(model_ms, shape, label)]


def label_of(system: str, sandboxed: bool | None) -> str:
    """`None`: agentkeel, on its own worker configuration."""
    return f"{system} sandboxed" if sandboxed else system


def print_table(results: Results, model_ms: int, shapes: dict[str, int], labels: list[str]) -> None:
    """`shapes`: each shape's name and tool steps."""
    head = (
        f"{'shape':<9}{'system':<25}{'median':>8}{'p90':>8}{'x agentkeel':>12}"
        f"{'events':>8}{'act tasks':>10}{'model stages':>13}{'wf tasks':>9}{'local':>6}"
    )
    print(f"\nmodel time {model_ms} ms per model call: end-to-end ms, and one run's history")
    print(head)
    print("-" * len(head))
    for shape in shapes:
        base = results.cell(model_ms, shape, AGENTKEEL).median
        for label in labels:
            cell = results.cell(model_ms, shape, label)
            h = cell.history
            counts = (
                f"{h.events:>8}{h.activity_tasks:>10}{h.model_stages:>13}"
                f"{h.workflow_tasks:>9}{h.local_activities:>6}"
                if h
                else ""
            )
            print(
                f"{shape:<9}{label:<25}{cell.median:>8.1f}{cell.p90:>8.1f}"
                f"{cell.median / base:>12.2f}{counts}"
            )


def print_verdict(results: Results, model_times: list[int], shapes: list[str]) -> None:
    """Per cell, the faster unsandboxed agent framework, and bare Temporal, as ratios of
    agentkeel (> 1: agentkeel is faster)."""
    print("\npeer / agentkeel, unsandboxed median e2e (> 1.00: agentkeel is faster)")
    print(f"{'model ms':<10}{'':<16}" + "".join(f"{s:>22}" for s in shapes))
    for model_ms in model_times:
        best_row, bare_row = f"{model_ms:<10}{'best framework':<16}", f"{'':<10}{'bare':<16}"
        for shape in shapes:
            base = results.cell(model_ms, shape, AGENTKEEL).median
            best = min(FRAMEWORKS, key=lambda p: results.cell(model_ms, shape, p).median)
            ratio = results.cell(model_ms, shape, best).median / base
            best_row += f"{f'{ratio:.2f} ({best})':>22}"
            bare_row += f"{results.cell(model_ms, shape, BARE).median / base:>22.2f}"
        print(best_row)
        print(bare_row)


def summary(results: Results, model_times: list[int], shapes: list[str]) -> dict[str, Any]:
    """The last line's object: model time, then shape, then system: unsandboxed median ms."""
    return {
        str(m): {
            s: {system: round(results.cell(m, s, system).median, 1) for system in SYSTEMS}
            for s in shapes
        }
        for m in model_times
    }
