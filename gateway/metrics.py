"""The gateway's Prometheus metrics at `GET /metrics`: requests by route, method and status,
their durations, and the event streams open now.

Per app, in a registry of its own (two gateways in one process, as in the tests, count
apart). Routes are their templates (`/v1/runs/{workflow_id}`), never the ids themselves, so
the series stay few; a path no route serves counts as `unmatched`.
"""

from __future__ import annotations

import time

from fastapi import FastAPI
from fastapi.responses import Response
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
)
from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["GatewayMetrics", "serve_metrics"]

DURATION_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120)


class GatewayMetrics:
    """ASGI middleware counting every HTTP request the gateway answers."""

    def __init__(self, app: ASGIApp, registry: CollectorRegistry) -> None:
        self.app = app
        self.requests = Counter(
            "agentkeel_gateway_requests", "HTTP requests answered",
            ["method", "route", "status"], registry=registry,
        )  # fmt: skip
        self.duration = Histogram(
            "agentkeel_gateway_request_duration_seconds",
            "From the request to the end of the answer (an event stream: until it closes)",
            ["method", "route"], buckets=DURATION_BUCKETS, registry=registry,
        )  # fmt: skip
        self.streams = Gauge(
            "agentkeel_gateway_event_streams", "Event streams open now", registry=registry
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500
        streaming = False

        async def sending(message: Message) -> None:
            nonlocal status, streaming
            if message["type"] == "http.response.start":
                status = message["status"]
                headers = dict(message.get("headers", []))
                streaming = headers.get(b"content-type", b"").startswith(b"text/event-stream")
                if streaming:
                    self.streams.inc()
            await send(message)

        try:
            await self.app(scope, receive, sending)
        finally:
            if streaming:
                self.streams.dec()
            route = getattr(scope.get("route"), "path", None) or "unmatched"
            # A client may send any method token: the label keeps to the known ones, so no
            # request can add series without bound.
            method = scope["method"] if scope["method"] in _METHODS else "other"
            self.requests.labels(method, route, str(status)).inc()
            self.duration.labels(method, route).observe(time.perf_counter() - started)


_METHODS = frozenset({"GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"})


def serve_metrics(app: FastAPI) -> None:
    """Count `app`'s requests and serve them at `GET /metrics` (Prometheus' text format)."""
    registry = CollectorRegistry()
    app.add_middleware(GatewayMetrics, registry=registry)

    @app.get("/metrics", include_in_schema=False)
    async def metrics() -> Response:
        return Response(generate_latest(registry), media_type=CONTENT_TYPE_LATEST)
