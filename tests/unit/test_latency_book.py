"""The latency book without Redis: it records nothing and reads the defaults."""

from __future__ import annotations

from agentkeel.activities.latency import LatencyBook
from agentkeel.schemas.deadline import LatencyEstimatesInput


async def test_no_redis_records_nothing_and_reads_defaults() -> None:
    book = LatencyBook(None)
    book.observe("any", "tool:get_order", 5.0)
    assert book._samples is None  # no writer, nothing queued
    estimates = await book.read("any", LatencyEstimatesInput(tools=["get_order"]))
    assert estimates.source != "measured"
