"""OpenTelemetry tracing, configured by the standard `OTEL_*` environment variables.

One request is one trace across processes: Temporal's OpenTelemetry plugin
(`temporalio.contrib.opentelemetry`) carries the context from the client that starts a run
to the CPU worker and the inference worker in Temporal headers; the graph's nodes, the tool
and model activities and the cache lookups add spans and attributes of their own; asyncpg,
Redis and HTTP calls appear as child spans through the maintained instrumentations.

A provider is installed, and libraries instrumented, only in agentkeel's own processes
(`configure_tracing`: the workers and the CLI's commands, the gateway among them), and only
when an exporter is configured (`OTEL_EXPORTER_OTLP_ENDPOINT`,
`OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` or `OTEL_TRACES_EXPORTER`, and not
`OTEL_SDK_DISABLED=true`). A service that embeds `AgentClient` keeps its own provider: the
client's spans go to whichever provider the host set, so a run's trace continues the host's
request, and nothing of the host's (its Redis, asyncpg or httpx) is instrumented by agentkeel.
The instrumentations are the `tracing` extra; without it a process traces its own spans only.
"""

from __future__ import annotations

import importlib
import os
from typing import Any

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
    """The Temporal plugin that carries and records spans: when this process's entry point
    configured tracing, or when the host service set a tracer provider of its own (then its
    client calls join the host's traces; nothing is installed)."""
    if _configured or host_has_provider():
        return [OpenTelemetryPlugin(add_temporal_spans=True)]
    return []


def host_has_provider() -> bool:
    """Whether a real tracer provider is set globally (not the API's proxy or no-op one)."""
    provider = trace.get_tracer_provider()
    return not isinstance(provider, (trace.ProxyTracerProvider, trace.NoOpTracerProvider))


def stop_tracing() -> None:
    """Stop tracing new clients and library calls (the provider stays: OpenTelemetry allows
    one per process). For tests that trace one scenario."""
    global _configured
    for instrumentor in _instrumentors():
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


def _instrumentors() -> list[Any]:
    """The instrumentations of the `tracing` extra that are installed."""
    found: list[Any] = []
    for module, name in _INSTRUMENTATIONS:
        try:
            found.append(getattr(importlib.import_module(module), name)())
        except ImportError:
            continue
    return found


_INSTRUMENTATIONS = (
    ("opentelemetry.instrumentation.asyncpg", "AsyncPGInstrumentor"),
    ("opentelemetry.instrumentation.redis", "RedisInstrumentor"),
    ("opentelemetry.instrumentation.httpx", "HTTPXClientInstrumentor"),
)


def _instrument_libraries() -> None:
    # Process-wide patches, so only ever called in agentkeel's own processes.
    instrumentors = _instrumentors()
    if len(instrumentors) < len(_INSTRUMENTATIONS):
        log.info("tracing_libraries", note="agentkeel[tracing] adds asyncpg, Redis, httpx spans")
    for instrumentor in instrumentors:
        if not instrumentor.is_instrumented_by_opentelemetry:
            instrumentor.instrument()
