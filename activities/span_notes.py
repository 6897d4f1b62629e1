"""Attributes on the span an activity runs in (Temporal's OpenTelemetry plugin opens one per
activity): what a trace reader needs to know about a tool call, a model call or a cache
lookup. Without tracing configured the current span is a no-op and these cost nothing."""

from __future__ import annotations

from opentelemetry import trace
from opentelemetry.util.types import AttributeValue
from temporalio import activity


def note(**attributes: AttributeValue | None) -> None:
    """`agentkeel.<name>` attributes on the current span (None values left out)."""
    span = trace.get_current_span()
    if not span.is_recording():
        return
    span.set_attributes({f"agentkeel.{k}": v for k, v in attributes.items() if v is not None})


def note_tool_call(tool: str, args: object) -> None:
    note(
        tool=tool,
        step_id=getattr(args, "call_id", None),
        attempt=activity.info().attempt if activity.in_activity() else None,
    )
