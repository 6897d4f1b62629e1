"""Tracing without a server: nothing is traced unless an exporter is configured, and each
model call is an event with its engine, tier, tokens and time, and a span with the GenAI
semantic conventions."""

from __future__ import annotations

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from agentkeel.inference.llm import model_events
from agentkeel.inference.llm.policy import LlmPolicy
from agentkeel.schemas.model_calls import RespondInput, RouteInput
from agentkeel.schemas.route import Route, Tier
from agentkeel.settings.tracing import tracing_requested
from tests.support.fakes import FakeEngine
from tests.support.plans import GOOD_PLAN


def test_nothing_is_traced_without_an_exporter_configured() -> None:
    assert not tracing_requested({})
    assert not tracing_requested({"OTEL_SERVICE_NAME": "x"})
    assert tracing_requested({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"})
    assert not tracing_requested(
        {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", "OTEL_SDK_DISABLED": "true"}
    )
    assert not tracing_requested({"OTEL_TRACES_EXPORTER": "none"})


async def test_each_model_call_is_an_event_with_engine_tier_tokens_and_time() -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()  # a provider of this test's own: the global one is untouched
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    engine = FakeEngine(label_probs={"order_status": 0.9, "refund": 0.1}, documents=[GOOD_PLAN])
    policy = LlmPolicy(engine, tier=Tier.LIGHT, threshold=0.7)
    with provider.get_tracer("test").start_as_current_span("RunActivity:route"):
        await policy.route(RouteInput(question="Where is order 1002?"))
        await policy.respond(
            RespondInput(
                question="Where is order 1002?",
                route=Route(intent="order_status", confidence=0.9, tier=Tier.LIGHT),
                steps=[],
            )
        )
    [span] = [s for s in exporter.get_finished_spans() if s.name == "RunActivity:route"]
    events = [dict(e.attributes or {}) for e in span.events if e.name == "model call"]
    assert len(events) == 3, "the label, the draft plan and the answer"
    assert {e["agentkeel.engine"] for e in events} == {engine.name}
    assert {e["agentkeel.tier"] for e in events} == {"light"}
    assert all("agentkeel.output_tokens" in e for e in events)
    assert "agentkeel.ttft_ms" in events[-1] and "agentkeel.ms" in events[0]


async def test_each_model_call_is_a_genai_span_under_the_activity(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """OpenTelemetry's GenAI semantic conventions: a client span per call named
    `{operation} {model}`, with the operation, the model and the token usage."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    engine = FakeEngine(label_probs={"order_status": 0.9, "refund": 0.1}, documents=[GOOD_PLAN])
    policy = LlmPolicy(engine, tier=Tier.LIGHT, threshold=0.7)
    # The calls' tracer, from this provider rather than the process's global one.
    monkeypatch.setattr(model_events, "_tracer", provider.get_tracer("agentkeel.inference"))
    with provider.get_tracer("test").start_as_current_span("RunActivity:route") as activity:
        await policy.route(RouteInput(question="Where is order 1002?"))
    calls = [s for s in exporter.get_finished_spans() if s.name != "RunActivity:route"]
    assert calls, "a span per model call"
    for call in calls:
        attributes = dict(call.attributes or {})
        assert call.name == f"text_completion {engine.name}"
        assert call.kind == trace.SpanKind.CLIENT
        assert call.parent is not None
        assert call.parent.span_id == activity.get_span_context().span_id
        assert attributes["gen_ai.operation.name"] == "text_completion"
        assert attributes["gen_ai.request.model"] == engine.name
        assert isinstance(attributes["gen_ai.usage.output_tokens"], int)
        assert "gen_ai.usage.input_tokens" in attributes
