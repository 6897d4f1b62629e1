"""`agentkeel trace WORKFLOW_ID`: one run as a waterfall, built from its Temporal history.

Every workflow task, activity (tool, model call), local activity (cache lookup, policy steps
on the CPU worker, the run record), timer and child run on one time axis, with the time it
waited in a task queue drawn apart from the time it ran: the critical path at a glance,
without a tracing backend.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime

from temporalio.api.history.v1 import HistoryEvent
from temporalio.client import WorkflowHistory

QUEUED, RAN, POINT = "·", "█", "▏"
_ENDS = {
    "activity_task_completed_event_attributes": "ok",
    "activity_task_failed_event_attributes": "failed",
    "activity_task_timed_out_event_attributes": "timed out",
    "activity_task_canceled_event_attributes": "cancelled",
}
_TASK_ENDS = {
    "workflow_task_completed_event_attributes": "",
    "workflow_task_failed_event_attributes": "failed",
    "workflow_task_timed_out_event_attributes": "timed out",
}
_CHILD_STARTED = "child_workflow_execution_started_event_attributes"
_CHILD_START_FAILED = "start_child_workflow_execution_failed_event_attributes"
_CLOSES = {
    "workflow_execution_completed_event_attributes": "completed",
    "workflow_execution_failed_event_attributes": "failed",
    "workflow_execution_timed_out_event_attributes": "timed out",
    "workflow_execution_canceled_event_attributes": "cancelled",
    "workflow_execution_terminated_event_attributes": "terminated",
    "workflow_execution_continued_as_new_event_attributes": "continued as new",
}


@dataclass
class Span:
    label: str
    start_ms: float
    """From the run's start."""
    queued_ms: float = 0.0
    """Waiting in a task queue (scheduled to started)."""
    ran_ms: float = 0.0
    note: str = ""


@dataclass
class Waterfall:
    workflow_id: str
    spans: list[Span]
    total_ms: float
    outcome: str


Open = dict[int, tuple[Span, datetime]]
"""Spans begun and not ended, by the event id their end refers to, with when their current
phase (waiting, then running) began."""


def run_waterfall(history: WorkflowHistory) -> Waterfall:
    events = list(history.events)
    if not events:
        return Waterfall(history.workflow_id, [], 0.0, "no history")
    t0 = _at(events[0])
    spans: list[Span] = []
    open_spans: Open = {}
    outcome = "running"
    for e in events:
        kind = e.WhichOneof("attributes") or ""
        at = _ms(_at(e), t0)
        if kind == "workflow_task_scheduled_event_attributes":
            span = Span("workflow task", at)
            open_spans[e.event_id] = (span, _at(e))
        elif kind == "workflow_task_started_event_attributes":
            _started(open_spans, e.workflow_task_started_event_attributes.scheduled_event_id, e)
        elif kind in _TASK_ENDS:
            done = _ended(open_spans, getattr(e, kind).scheduled_event_id, e)
            if done is not None:
                done.note = _TASK_ENDS[kind]
                spans.append(done)
        elif kind == "activity_task_scheduled_event_attributes":
            scheduled = e.activity_task_scheduled_event_attributes
            name, summary = scheduled.activity_type.name, _summary(e)
            label = f"{name} · {summary}" if summary and summary != name else name
            span = Span(label, at, note=f"queue {scheduled.task_queue.name}")
            open_spans[e.event_id] = (span, _at(e))
        elif kind == "activity_task_started_event_attributes":
            started = e.activity_task_started_event_attributes
            span_at = _started(open_spans, started.scheduled_event_id, e)
            if span_at is not None and started.attempt > 1:
                # History records only the last attempt's start: what precedes it is the
                # earlier attempts and their backoff, not a queue.
                span_at.note += f", attempt {started.attempt} (· includes earlier attempts)"
        elif kind in _ENDS:
            done = _ended(open_spans, getattr(e, kind).scheduled_event_id, e)
            if done is not None:
                done.note = f"{_ENDS[kind]}, {done.note}"
                spans.append(done)
        elif kind == "marker_recorded_event_attributes":
            local = _local_activity(e)
            if local is not None:
                spans.append(Span(f"{local} (local)", at, note="ran inside the workflow task"))
        elif kind == "timer_started_event_attributes":
            summary = _summary(e) or "timer"
            open_spans[e.event_id] = (Span(f"timer · {summary}", at), _at(e))
            open_spans[e.event_id][0].queued_ms = 0.0
            _started(open_spans, e.event_id, e)
        elif kind in ("timer_fired_event_attributes", "timer_canceled_event_attributes"):
            done = _ended(open_spans, getattr(e, kind).started_event_id, e)
            if done is not None and kind == "timer_canceled_event_attributes":
                done.note = "cancelled (what it waited for came first)"
            if done is not None:
                spans.append(done)
        elif kind == "start_child_workflow_execution_initiated_event_attributes":
            child = e.start_child_workflow_execution_initiated_event_attributes
            open_spans[e.event_id] = (Span(f"child {child.workflow_id}", at), _at(e))
        elif kind == _CHILD_STARTED:
            _started(open_spans, getattr(e, kind).initiated_event_id, e)
        elif kind.startswith("child_workflow_execution_") or kind == _CHILD_START_FAILED:
            done = _ended(open_spans, getattr(e, kind).initiated_event_id, e)
            if done is not None:
                spans.append(done)
        elif kind in _CLOSES:
            outcome = _CLOSES[kind]
    total = _ms(_at(events[-1]), t0)
    for span, _ in open_spans.values():  # still running: up to the last event
        if span.ran_ms == 0.0:
            span.ran_ms = max(total - span.start_ms - span.queued_ms, 0.0)
        span.note = (span.note + ", still open").lstrip(", ")
        spans.append(span)
    spans.sort(key=lambda s: (s.start_ms, s.label))
    return Waterfall(history.workflow_id, spans, total, outcome)


def _at(e: HistoryEvent) -> datetime:
    return e.event_time.ToDatetime()


def _ms(at: datetime, t0: datetime) -> float:
    return (at - t0).total_seconds() * 1000


def _started(open_spans: Open, key: int, e: HistoryEvent) -> Span | None:
    entry = open_spans.get(key)
    if entry is None:
        return None
    span, scheduled = entry
    span.queued_ms = _ms(_at(e), scheduled)
    open_spans[key] = (span, _at(e))
    return span


def _ended(open_spans: Open, key: int, e: HistoryEvent) -> Span | None:
    entry = open_spans.pop(key, None)
    if entry is None:
        return None
    span, started = entry
    span.ran_ms = _ms(_at(e), started)
    return span


def _summary(e: HistoryEvent) -> str:
    """The summary a command carried (`summary=` in the workflow), as the Web UI shows it."""
    if not e.HasField("user_metadata") or not e.user_metadata.HasField("summary"):
        return ""
    try:
        value = json.loads(e.user_metadata.summary.data)
    except ValueError:
        return ""
    return value if isinstance(value, str) else ""


def _local_activity(e: HistoryEvent) -> str | None:
    attrs = e.marker_recorded_event_attributes
    if attrs.marker_name != "core_local_activity" or "data" not in attrs.details:
        return None
    try:
        return str(json.loads(attrs.details["data"].payloads[0].data)["activity_type"])
    except (ValueError, KeyError, IndexError):
        return "local activity"


def format_waterfall(w: Waterfall, *, width: int = 60) -> str:
    width = max(width, 10)
    scale = width / w.total_ms if w.total_ms > 0 else 0.0
    label_w = min(max((len(s.label) for s in w.spans), default=10), 48)
    lines = [
        f"{w.workflow_id}: {w.outcome} in {w.total_ms:.1f} ms   "
        f"({QUEUED} waiting in a task queue, {RAN} running, {POINT} inside a workflow task)",
        "",
    ]
    for s in w.spans:
        label = s.label if len(s.label) <= label_w else s.label[: label_w - 1] + "…"
        lead = int(s.start_ms * scale)
        queued = round(s.queued_ms * scale)
        ran = max(round(s.ran_ms * scale), 0)
        local = s.label.endswith("(local)")
        # Anything that ran outside a workflow task shows at least one cell of running.
        bar = " " * lead + QUEUED * queued + (POINT if local else RAN * max(ran, 1))
        timing = f"{s.start_ms:8.1f} +{s.queued_ms:6.1f} +{s.ran_ms:7.1f} ms"
        lines.append(f"  {label:<{label_w}} {timing}  {bar:<{width + 1}} {s.note}".rstrip())
    lines.append("")
    lines.append(f"  {'':<{label_w}} {'start':>8} {'queued':>7} {'ran':>9}")
    return "\n".join(lines)
