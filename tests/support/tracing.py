"""Spans finished in this process, kept in memory."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from agentkeel.settings.tracing import configure_tracing, stop_tracing


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    configure_tracing("agentkeel-test", processor=SimpleSpanProcessor(exporter))
    try:
        yield exporter
    finally:
        stop_tracing()
        exporter.shutdown()
