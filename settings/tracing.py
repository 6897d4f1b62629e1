"""OpenTelemetry tracing, configured by the standard `OTEL_*` environment variables.

One request is one trace across processes: Temporal's OpenTelemetry plugin
(`temporalio.contrib.opentelemetry`) carries the context from the client that starts a run
to the CPU worker and the inference worker in Temporal headers; the graph's nodes, the tool
and model activities and the cache lookups add spans and attributes of their own; asyncpg,
Redis and HTTP calls appear as child spans through the maintained instrumentations.

With no exporter configured (neither `OTEL_EXPORTER_OTLP_ENDPOINT`,
`OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` nor `OTEL_TRACES_EXPORTER`), or with
`OTEL_SDK_DISABLED=true`, nothing is set up: no plugin, no provider, no cost.
"""

from __future__ import annotations

import os

import structlog
from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import SpanProcessor
from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter, SpanExporter
from temporalio.contrib.opentelemetry import (
    OpenTelemetryPlugin,
    ReplaySafeTracerProvider,
    create_tracer_provider,
)
from temporalio.plugin import SimplePlugin

log = structlog.get_logger(__name__)

_configured = False
_provider: ReplaySafeTracerProvider | None = None


def tracing_requested(environ: os._Environ[str] | dict[str, str] | None = None) -> bool:
    env = os.environ if environ is None else environ
    if env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    exporter = env.get("OTEL_TRACES_EXPORTER", "").strip().lower()
    if exporter == "none":
        return False
    endpoints = ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
    return bool(exporter) or any(env.get(name, "").strip() for name in endpoints)


def configure_tracing(service_name: str, *, processor: SpanProcessor | None = None) -> bool:
    """Install a replay-safe tracer provider exporting as the `OTEL_*` variables say (or to
    `processor`), and instrument asyncpg, Redis and httpx; False when tracing is off.

    `OTEL_SERVICE_NAME` overrides `service_name`; `OTEL_TRACES_SAMPLER` and its argument are
    read by the SDK (e.g. `parentbased_traceidratio` with `0.1`)."""
    global _configured
    if processor is None and (_configured or not tracing_requested()):
        return _configured
    name = os.environ.get("OTEL_SERVICE_NAME") or service_name
    global _provider
    provider = _provider
    if provider is None:  # one per process (OpenTelemetry refuses a second)
        provider = create_tracer_provider(resource=Resource.create({"service.name": name}))
        trace.set_tracer_provider(provider)
        if trace.get_tracer_provider() is not provider:
            # Another provider came first (an auto-instrumentation wrapper, say): workflow
            # code must not trace through one that is not replay-safe.
            log.warning("tracing_off", reason="another OpenTelemetry tracer provider is set")
            return False
        _provider = provider
    provider.add_span_processor(processor or BatchSpanProcessor(_exporter()))
    _instrument_libraries()
    _configured = True
    log.info("tracing_on", service=name)
    return True


def tracing_plugins() -> list[SimplePlugin]:
    """The Temporal plugin that carries and records spans, when tracing is configured (by
    this process's entry point, or here, for a service embedding `AgentClient` with the
    `OTEL_*` variables set)."""
    if not _configured and tracing_requested():
        configure_tracing(os.environ.get("OTEL_SERVICE_NAME") or "agentkeel-client")
    return [OpenTelemetryPlugin(add_temporal_spans=True)] if _configured else []


def stop_tracing() -> None:
    """Stop tracing new clients and library calls (the provider stays: OpenTelemetry allows
    one per process). For tests that trace one scenario."""
    global _configured
    from opentelemetry.instrumentation.asyncpg import AsyncPGInstrumentor
    from opentelemetry.instrumentation.httpx import HTTPXClientInstrumentor
    from opentelemetry.instrumentation.redis import RedisInstrumentor

    for instrumentor in (AsyncPGInstrumentor(), RedisInstrumentor(), HTTPXClientInstrumentor()):
        if instrumentor.is_instrumented_by_opentelemetry:
            instrumentor.uninstrument()
    _configured = False


def flush_tracing(timeout_ms: int = 5000) -> None:
    """Send the spans still queued (a CLI leaves without interpreter teardown)."""
    provider = trace.get_tracer_provider()
    flush = getattr(provider, "force_flush", None)
    if _configured and flush is not None:
        flush(timeout_ms)


def _exporter() -> SpanExporter:
    if os.environ.get("OTEL_TRACES_EXPORTER", "").strip().lower() == "console":
        return ConsoleSpanExporter()
    protocol = os.environ.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL") or os.environ.get(
        "OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf"
    )
    if protocol.strip().lower() == "grpc":
        try:
            from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import (
                OTLPSpanExporter as GrpcExporter,
            )
        except ImportError:
            log.warning(
                "tracing_protocol",
                wanted="grpc",
                using="http/protobuf",
                why="no grpc exporter installed",
            )
        else:
            return GrpcExporter()
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    return OTLPSpanExporter()  # endpoint, headers and timeout from OTEL_EXPORTER_OTLP_*


def _instrument_libraries() -> None:
    from opentelemetry.instrumentation.asyncpg import AsyncPGInstrumentor
    from opentelemetry.instrumentation.httpx import HTTPXClientInstrumentor
    from opentelemetry.instrumentation.redis import RedisInstrumentor

    for instrumentor in (AsyncPGInstrumentor(), RedisInstrumentor(), HTTPXClientInstrumentor()):
        if not instrumentor.is_instrumented_by_opentelemetry:
            instrumentor.instrument()
