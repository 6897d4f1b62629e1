"""What `agentkeel ask` and `agentkeel result` print for a run's steps: how long each took
and when it started, so that reads that ran in parallel show it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from agentkeel.client.report import format_result
from agentkeel.schemas.plan.model import Plan
from agentkeel.schemas.result import AgentResult, CacheStatus, StepOutcome, StepStatus
from agentkeel.schemas.route import Route

T0 = datetime(2026, 12, 6, 1, 0, tzinfo=UTC)


def _step(step_id: str, tool: str, start_ms: int, took_ms: int) -> StepOutcome:
    started = T0 + timedelta(milliseconds=start_ms)
    return StepOutcome(
        id=step_id,
        tool=tool,
        status=StepStatus.SUCCEEDED,
        started_at=started,
        finished_at=started + timedelta(milliseconds=took_ms),
    )


def _result(cache: CacheStatus = CacheStatus.MISS) -> AgentResult:
    return AgentResult(
        answer="Order 1 ships today.",
        route=Route(intent="order_status", confidence=1.0),
        cache=cache,
        plan=Plan(),
        steps=[
            _step("s1", "get_order", 120, 8),
            _step("s2", "get_customer", 121, 6),
            _step("s3", "track_shipment", 130, 40),
        ],
    )


def test_each_step_shows_its_start_after_the_runs_start_parallel_ones_alike() -> None:
    text = format_result(_result(), run_started=T0)
    assert "s1   get_order     ok 8 ms, started at +120 ms" in text
    assert "s2   get_customer     ok 6 ms, started at +121 ms" in text
    assert "s3   track_shipment     ok 40 ms, started at +130 ms" in text


def test_without_the_runs_start_offsets_count_from_the_first_step() -> None:
    text = format_result(_result())
    assert "ok 8 ms, started at +0 ms" in text and "ok 40 ms, started at +10 ms" in text


def test_a_cached_answers_steps_show_no_times_they_did_not_run_now() -> None:
    text = format_result(_result(CacheStatus.EXACT), run_started=T0)
    assert "(steps of the cached run; no tool ran now)" in text
    assert "started at" not in text and " ms," not in text
