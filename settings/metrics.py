"""Prometheus metrics of a worker process: the Temporal SDK's and the project's, one endpoint.

The Temporal runtime serves them (`PrometheusConfig`); the project's own metrics
(`schemas.metrics`) are created on the same runtime's meter by the workflow, the activities
and the policies, so there is one scrape target per worker and no second HTTP server.
"""

from __future__ import annotations

import logging

from temporalio.runtime import (
    LogForwardingConfig,
    LoggingConfig,
    PrometheusConfig,
    Runtime,
    TelemetryConfig,
    TelemetryFilter,
)

from agentkeel.schemas import metrics
from agentkeel.settings.model import (
    ENV_PREFIX,
    Settings,
    SettingsError,
    StartupError,
    metrics_ip_port,
)

DEFAULT_ADDRESSES = {"cpu": "127.0.0.1:9464", "inference": "127.0.0.1:9465"}
CORE_LOGGER = "temporalio.core"
"""The Python logger Temporal Core's own (Rust) log lines are forwarded to."""
OFF = "off"


def metrics_address(settings: Settings, kind: str) -> str | None:
    """Where worker `kind` serves its metrics; None when `AGENTKEEL_METRICS_ADDRESS=off`."""
    address = settings.metrics_address.strip()
    if address.lower() == OFF:
        return None
    if not address:
        return DEFAULT_ADDRESSES[kind]
    host, port = _ip_and_port(address)
    return f"{host}:{port}"


def metrics_runtime(address: str) -> Runtime:
    """A Temporal runtime serving Prometheus metrics at `address`, made the process default
    (so `Runtime.default().metric_meter` and every client built after it use it)."""
    try:
        runtime = Runtime(
            telemetry=TelemetryConfig(
                logging=core_logging(),
                metrics=PrometheusConfig(
                    bind_address=address,
                    counters_total_suffix=True,
                    durations_as_seconds=True,
                    histogram_bucket_overrides={metrics.LAYER_DURATION: metrics.LAYER_BUCKETS_S},
                ),
            )
        )
    except Exception as exc:  # the core reports a taken port as a plain error
        raise StartupError(
            f"cannot serve metrics at {address} ({exc}); set {ENV_PREFIX}METRICS_ADDRESS "
            "to a free host:port, or to off"
        ) from None
    Runtime.set_default(runtime, error_if_already_set=False)
    return runtime


def core_logging(level: str = "WARN") -> LoggingConfig:
    """Temporal Core's log lines at `level` and above, forwarded to the `temporalio.core`
    Python logger: they join the process's own log stream (JSON where it is JSON,
    `settings.logging`) instead of Core's ANSI-coloured text on stderr."""
    return LoggingConfig(
        filter=TelemetryFilter(core_level=level, other_level="ERROR"),
        forwarding=LogForwardingConfig(logger=logging.getLogger(CORE_LOGGER)),
    )


def forward_core_logs(level: str = "WARN") -> None:
    """Make the process's default Temporal runtime one that forwards Core's logs (before
    any client is made: clients take the default runtime as they connect). agentkeel's own
    processes call it; a service embedding `AgentClient` keeps its runtime as it is."""
    runtime = Runtime(telemetry=TelemetryConfig(logging=core_logging(level)))
    Runtime.set_default(runtime, error_if_already_set=False)


def stack_metrics_addresses(settings: Settings) -> dict[str, str | None]:
    """Each worker of `agentkeel up` its own address: the defaults; with
    `AGENTKEEL_METRICS_ADDRESS=host:port`, the CPU worker that and the inference worker the
    next port; with `off`, none."""
    address = settings.metrics_address.strip()
    if address.lower() == OFF:
        return {"cpu": None, "inference": None}
    if not address:
        return dict(DEFAULT_ADDRESSES)
    host, port = _ip_and_port(address)
    return {"cpu": f"{host}:{port}", "inference": f"{host}:{port + 1}"}


def _ip_and_port(address: str) -> tuple[str, int]:
    """`ip:port` split (the settings model has checked that it is one)."""
    split = metrics_ip_port(address)
    if split is None:  # settings copied with a changed address are not checked again
        raise SettingsError(f"{ENV_PREFIX}METRICS_ADDRESS must be ip:port, got {address!r}")
    return split
