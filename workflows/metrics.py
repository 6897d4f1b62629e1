"""What a finished run adds to its worker's metrics (`schemas.metrics`).

Through the workflow's own meter: Temporal skips it while a run replays, so a run is counted
once however often a worker rebuilds it.
"""

from __future__ import annotations

from temporalio import workflow
from temporalio.common import MetricMeter

from agentkeel.schemas import metrics
from agentkeel.schemas.result import ANSWER_HITS, AgentResult

LAYERS = ("cache", "route", "plan", "tools", "respond", "total", "ttft")


def observe_run(result: AgentResult) -> None:
    """Counted, never in the way: a metric that cannot be recorded never fails the run."""
    try:
        _observe(result)
    except Exception as exc:
        workflow.logger.warning("run metrics not recorded: %s", exc)


def _observe(result: AgentResult) -> None:
    meter = workflow.metric_meter()
    durations = meter.create_histogram_float(
        metrics.LAYER_DURATION, "Time per layer of a finished run", "s"
    )
    timings = result.timings_ms
    for layer in LAYERS:
        value = getattr(timings, layer)
        # Not recorded for a layer the run did not go through (a hit skips routing).
        if value is not None and (value > 0 or layer == "total"):
            durations.record(value / 1000, {"layer": layer})
    observe_ahead(meter, result)
    if result.cache in ANSWER_HITS:
        return  # a whole answer from the cache: its steps ran in the run that was cached
    calls = meter.create_counter(metrics.TOOL_CALLS, "Plan steps finished, by tool and outcome")
    for step in result.steps:
        calls.add(1, {"tool": step.tool, "outcome": step.status.value})


def observe_ahead(meter: MetricMeter, result: AgentResult) -> None:
    """Speculative reads by outcome (hit rate, wasted calls) and deadlines met and traded."""
    if result.speculation is not None and result.speculation.calls:
        speculative = meter.create_counter(
            metrics.SPECULATIVE_CALLS, "Speculative reads, by what became of them"
        )
        for call in result.speculation.calls:
            speculative.add(1, {"outcome": call.outcome.value})
    if result.deadline is not None:
        meter.create_counter(metrics.DEADLINE_RUNS, "Runs with a deadline, by met").add(
            1, {"met": str(result.deadline.met).lower()}
        )
        decisions = meter.create_counter(
            metrics.DEADLINE_DECISIONS, "Trades made to meet a deadline, by kind"
        )
        for decision in result.deadline.decisions:
            decisions.add(1, {"kind": decision.kind.value})


def observe_approval(outcome: str | None) -> None:
    """An approval wait began (`outcome` None) or ended (approved, rejected, timed_out,
    abandoned: the run was cancelled or continued while it waited)."""
    try:
        _approval(outcome)
    except Exception as exc:
        workflow.logger.warning("approval metrics not recorded: %s", exc)


def _approval(outcome: str | None) -> None:
    meter = workflow.metric_meter()
    if outcome is None:
        meter.create_counter(metrics.APPROVALS_REQUESTED, "Approval waits begun").add(1)
    else:
        ended = meter.create_counter(metrics.APPROVALS_ENDED, "Approval waits ended")
        ended.add(1, {"outcome": outcome})
