"""Each model call as a span with OpenTelemetry's GenAI semantic conventions, and as an event
on the model activity's span: when tracing is configured (`settings.tracing`, or the host's
own provider), a no-op otherwise. What a trace reader asks of a model call: which model,
engine and tier, how many tokens in and out, how long, how soon the first token."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from opentelemetry import trace

from agentkeel.schemas.route import Tier

_tracer = trace.get_tracer("agentkeel.inference")


def model_event(engine: str, tier: Tier, **numbers: float | str | None) -> None:
    span = trace.get_current_span()
    if not span.is_recording():
        return
    attributes = {f"agentkeel.{k}": v for k, v in numbers.items() if v is not None}
    attributes |= {"agentkeel.engine": engine, "agentkeel.tier": tier.value}
    span.add_event("model call", attributes)


@contextmanager
def model_span(engine: Any, tier: Tier) -> Iterator[trace.Span]:
    """A client span for one model call, named and attributed as the GenAI conventions
    say (`{operation} {model}`, `gen_ai.operation.name`, `gen_ai.request.model`); the caller
    adds the usage with `record_usage`. A child of the current span, and only when that one
    records: an untraced call makes no span."""
    if not trace.get_current_span().is_recording():
        yield trace.INVALID_SPAN
        return
    operation = "chat" if getattr(engine, "api", "completions") == "chat" else "text_completion"
    attributes = {
        "gen_ai.operation.name": operation,
        "gen_ai.request.model": engine.name,
        "gen_ai.provider.name": "openai",  # the OpenAI-compatible API every engine speaks
        "agentkeel.tier": tier.value,
    }
    with _tracer.start_as_current_span(
        f"{operation} {engine.name}", kind=trace.SpanKind.CLIENT, attributes=attributes
    ) as span:
        yield span


def record_usage(
    span: trace.Span, input_tokens: int | None, output_tokens: int | None, finish: str | None
) -> None:
    """The call's token counts and finish reason, as `gen_ai.usage.*` and
    `gen_ai.response.finish_reasons`."""
    if not span.is_recording():
        return
    if input_tokens is not None:
        span.set_attribute("gen_ai.usage.input_tokens", input_tokens)
    if output_tokens is not None:
        span.set_attribute("gen_ai.usage.output_tokens", output_tokens)
    if finish:
        span.set_attribute("gen_ai.response.finish_reasons", [finish])
