"""What `bench.peers` counts and prints.

Per run the end-to-end time; per cell (speed, row, shape, variant) the runs of every
invocation, one run's history (events, activity tasks, workflow tasks, local activities)
and its model requests; then the tables, each variant beside agentkeel's best measured in
the same invocation, with the spread of the invocations' medians.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from temporalio.api.enums.v1 import EventType
from temporalio.client import WorkflowHandle

AGENTKEEL = "agentkeel"
FRAMEWORKS = ("pydantic-ai", "openai-agents")
BARE = "bare"
SYSTEMS = (AGENTKEEL, *FRAMEWORKS, BARE)


@dataclass(frozen=True)
class HistoryStats:
    """One run's history: what Temporal recorded and dispatched for it."""

    events: int
    activity_tasks: int
    """Activities scheduled (each a task on a queue, polled by a worker)."""
    workflow_tasks: int
    """Workflow tasks completed: each a round trip of the workflow to its worker."""
    local_activities: int


async def history_stats(handle: WorkflowHandle[Any, Any]) -> HistoryStats:
    events = (await handle.fetch_history()).events
    kinds = [e.event_type for e in events]
    local = sum(
        1
        for e in events
        if e.event_type == EventType.EVENT_TYPE_MARKER_RECORDED
        and e.marker_recorded_event_attributes.marker_name == "core_local_activity"
    )
    return HistoryStats(
        events=len(events),
        activity_tasks=kinds.count(EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED),
        workflow_tasks=kinds.count(EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED),
        local_activities=local,
    )


@dataclass
class Cell:
    """One variant on one shape, row and speed: its runs, by invocation."""

    runs: dict[int, list[float]] = field(default_factory=lambda: defaultdict(list))
    history: HistoryStats | None = None
    model_requests: int | None = None
    first_tool_ms: list[float] = field(default_factory=list)

    def add(self, invocation: int, e2e_ms: float) -> None:
        self.runs[invocation].append(e2e_ms)

    @property
    def median(self) -> float:
        return statistics.median([ms for runs in self.runs.values() for ms in runs])

    @property
    def spread(self) -> tuple[float, float]:
        """The lowest and the highest of the invocations' medians."""
        medians = [statistics.median(runs) for runs in self.runs.values() if runs]
        return min(medians), max(medians)


Key = tuple[str, str, str, str]
"""(speed, row, shape, variant label)."""


@dataclass
class Results:
    cells: dict[Key, Cell] = field(default_factory=lambda: defaultdict(Cell))

    def cell(self, speed: str, row: str, shape: str, label: str) -> Cell:
        return self.cells[(speed, row, shape, label)]

    def best(self, speed: str, row: str, shape: str, system: str, labels: list[str]) -> str:
        """The label of `system`'s fastest variant in this cell (its best configuration)."""
        own = [label for label in labels if system_of(label) == system]
        return min(own, key=lambda label: self.cell(speed, row, shape, label).median)


def system_of(label: str) -> str:
    """`agentkeel (queue tools)` -> `agentkeel`."""
    return label.split(" (")[0]


def print_table(
    results: Results, speed: str, row: str, shapes: list[str], labels: list[str]
) -> None:
    head = (
        f"{'shape':<9}{'variant':<38}{'median':>8}{'spread':>15}{'x agentkeel':>12}"
        f"{'model req':>10}{'events':>7}{'acts':>5}{'wf tasks':>9}{'local':>6}{'1st tool':>9}"
    )
    print(
        f"\n{speed} model, {row} rows: end-to-end ms (median of all runs; spread = lowest and "
        "highest invocation median), one run's history"
    )
    print(head)
    print("-" * len(head))
    for shape in shapes:
        base = results.cell(speed, row, shape, results.best(speed, row, shape, AGENTKEEL, labels))
        for label in labels:
            cell = results.cell(speed, row, shape, label)
            low, high = cell.spread
            h = cell.history
            counts = (
                f"{h.events:>7}{h.activity_tasks:>5}{h.workflow_tasks:>9}{h.local_activities:>6}"
                if h
                else f"{'':>27}"
            )
            first = f"{statistics.median(cell.first_tool_ms):>9.0f}" if cell.first_tool_ms else ""
            print(
                f"{shape:<9}{label:<38}{cell.median:>8.0f}{f'{low:.0f}-{high:.0f}':>15}"
                f"{cell.median / base.median:>12.2f}{cell.model_requests or 0:>10}{counts}{first}"
            )


def print_verdict(
    results: Results, speeds: list[str], rows: list[str], shapes: list[str], labels: list[str]
) -> None:
    """Per cell, the fastest peer at its best as a ratio of agentkeel at its best."""
    print("\nbest peer / agentkeel at its best, median e2e (> 1.00: agentkeel is faster)")
    print(f"{'speed':<9}{'row':<7}" + "".join(f"{s:>24}" for s in shapes))
    for speed in speeds:
        for row in rows:
            line = f"{speed:<9}{row:<7}"
            for shape in shapes:
                ours = results.cell(
                    speed, row, shape, results.best(speed, row, shape, AGENTKEEL, labels)
                )
                peers = [results.best(speed, row, shape, p, labels) for p in (*FRAMEWORKS, BARE)]
                fastest = min(
                    peers, key=lambda label: results.cell(speed, row, shape, label).median
                )
                ratio = results.cell(speed, row, shape, fastest).median / ours.median
                line += f"{f'{ratio:.2f} ({system_of(fastest)})':>24}"
            print(line)


def summary(
    results: Results, speeds: list[str], shapes: list[str], labels: list[str], row: str = "warm"
) -> dict[str, Any]:
    """The last line's object: speed, then shape, then system: the warm median end to end
    in ms of each system at its best configuration."""
    return {
        speed: {
            shape: {
                system: round(
                    results.cell(
                        speed, row, shape, results.best(speed, row, shape, system, labels)
                    ).median,
                    1,
                )
                for system in SYSTEMS
                if any(system_of(label) == system for label in labels)
            }
            for shape in shapes
        }
        for speed in speeds
    }
