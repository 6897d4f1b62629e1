"""agentkeel in a host service's telemetry: the client's Temporal plugin uses whatever tracer
provider the host set, and agentkeel installs no provider and instruments none of the host's
libraries, even with an exporter configured. Each case in a fresh interpreter: a global
tracer provider can be set once per process."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.support.paths import ROOT

PROBE = """
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
HOST = {host}
if HOST:
    host = TracerProvider()
    trace.set_tracer_provider(host)
from agentkeel.settings.tracing import _instrumentors, tracing_plugins
plugins = tracing_plugins()
provider = trace.get_tracer_provider()
print(sorted(type(p).__name__ for p in plugins))
print(provider is host if HOST else type(provider).__name__)
print(sorted(type(i).__name__ for i in _instrumentors() if i.is_instrumented_by_opentelemetry))
"""


def _probe(host: bool) -> list[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env["OTEL_EXPORTER_OTLP_ENDPOINT"] = "http://127.0.0.1:9"  # an exporter is configured
    done = subprocess.run(
        [sys.executable, "-c", PROBE.format(host=host)],
        capture_output=True, text=True, env=env, cwd=ROOT, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout.strip().splitlines()


@pytest.mark.parametrize("host", [True, False])
def test_the_client_uses_the_hosts_provider_and_instruments_nothing(host: bool) -> None:
    plugins, provider, instrumented = _probe(host)
    if host:  # its spans join the host's traces, through the host's own provider
        assert plugins == "['OpenTelemetryPlugin']"
        assert provider == "True"
    else:  # a host without tracing gets none from agentkeel
        assert plugins == "[]"
        assert provider == "ProxyTracerProvider"
    assert instrumented == "[]", "the host's Redis, asyncpg and httpx are the host's"
