"""Each model call as an event on the current span: the model activity's when tracing is
configured (`settings.tracing`), a no-op otherwise. What a trace reader asks of a model call:
which engine and tier, how many tokens in and out, how long, how soon the first token."""

from __future__ import annotations

from opentelemetry import trace

from agentkeel.schemas.route import Tier


def model_event(engine: str, tier: Tier, **numbers: float | str | None) -> None:
    span = trace.get_current_span()
    if not span.is_recording():
        return
    attributes = {f"agentkeel.{k}": v for k, v in numbers.items() if v is not None}
    attributes |= {"agentkeel.engine": engine, "agentkeel.tier": tier.value}
    span.add_event("model call", attributes)
