"""A stand-in for a remote carrier-tracking API, served locally with aiohttp.

`GET /v1/tracking/{tracking_number}` answers a `schemas.tools.Tracking` as JSON, after a
configurable latency, for any number matching `^TRK\\d{10}$`, and a 404 JSON error for any
other. Answers are derived from the tracking number alone, so they are the same on every run
and on every machine: carrier (the seed's `carrier_for`), status, ETA and events, oldest
event first, all timed before the seed's `SEED_NOW`. `GET /healthz` answers 200.

`POST /v1/tracking:batch` with `{"tracking_numbers": [...]}` (at most 100) answers
`{"results": [{"tracking": {...}} or {"error": "not_found", "message": ...}, ...]}` in the
same order, after one latency: many parcels in one round trip. `GET /stats` answers
`{"requests": n, "peak_concurrency": n, "in_flight": n}` (tracking requests since start, a
batch counting once), so tests and benchmarks see what reached the carrier.

Run it with
`python -m agentkeel.examples.shop.carrier --host 127.0.0.1 --port 8787 --latency-ms 40`.
"""

from __future__ import annotations

import argparse
import asyncio
import errno
import hashlib
import random
import re
import signal
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import timedelta
from typing import Any

from aiohttp import web

from agentkeel.examples.shop.carrier_api import Tracking, TrackingEvent
from agentkeel.examples.shop.seed import SEED_NOW, carrier_for

__all__ = ["build_app", "main", "serve", "serving", "tracking_for"]

_TRACKING_NUMBER = re.compile(r"^TRK\d{10}$")
_LATENCY_S = web.AppKey("latency_s", float)
MAX_BATCH = 100


class _Stats:
    def __init__(self) -> None:
        self.requests = 0
        self.in_flight = 0
        self.peak_concurrency = 0

    def as_json(self) -> dict[str, int]:
        return {
            "requests": self.requests,
            "peak_concurrency": self.peak_concurrency,
            "in_flight": self.in_flight,
        }


_STATS = web.AppKey("stats", _Stats)
_ORIGINS = ("Amsterdam, NL", "Chicago, US", "Singapore, SG")
_HUBS = ("Utrecht, NL", "Leipzig, DE", "Louisville, US", "Memphis, US", "Hong Kong, HK")
_DESTINATIONS = ("Rotterdam, NL", "Berlin, DE", "Paris, FR", "New York, US", "Sydney, AU")
# (hours after the label, where, what); a status shows the first n of them.
_JOURNEY = (
    (0, "origin", "Shipment information received"),
    (4, "origin", "Picked up by carrier"),
    (11, "origin", "Departed carrier facility"),
    (29, "hub", "Arrived at sorting hub"),
    (52, "destination", "Out for delivery"),
    (57, "destination", "Delivered"),
)
_EVENTS_BY_STATUS = {"in_transit": 4, "out_for_delivery": 5, "delivered": 6}


def tracking_for(tracking_number: str) -> Tracking:
    """The carrier's answer for a well-formed tracking number, derived from the number alone."""
    rng = random.Random(hashlib.sha256(tracking_number.encode()).digest())
    status = rng.choices(list(_EVENTS_BY_STATUS), weights=(50, 15, 35))[0]
    places = {
        "origin": rng.choice(_ORIGINS),
        "hub": rng.choice(_HUBS),
        "destination": rng.choice(_DESTINATIONS),
    }
    shown = _EVENTS_BY_STATUS[status]
    # The label is as old as the status says: past its last event, short of the next one.
    latest = _JOURNEY[shown - 1][0]
    following = _JOURNEY[shown][0] if shown < len(_JOURNEY) else latest + 120
    labelled = SEED_NOW - timedelta(hours=rng.randint(latest, following - 1))
    events = [
        TrackingEvent(
            at=(labelled + timedelta(hours=hours)).isoformat(),
            location=places[where],
            description=description,
        )
        for hours, where, description in _JOURNEY[:shown]
    ]
    delivery = labelled + timedelta(hours=_JOURNEY[-1][0])
    eta = None if status == "delivered" else delivery.date().isoformat()
    return Tracking(
        tracking_number=tracking_number,
        carrier=carrier_for(tracking_number),
        status=status,
        eta=eta,
        events=events,
    )


@web.middleware
async def _count(request: web.Request, handler: Any) -> web.StreamResponse:
    if not request.path.startswith("/v1/"):
        return await handler(request)
    stats = request.app[_STATS]
    stats.requests += 1
    stats.in_flight += 1
    stats.peak_concurrency = max(stats.peak_concurrency, stats.in_flight)
    try:
        return await handler(request)
    finally:
        stats.in_flight -= 1


def _not_found(number: str) -> dict[str, str]:
    return {"error": "not_found", "message": f"unknown tracking number {number!r}"}


async def _track(request: web.Request) -> web.Response:
    await asyncio.sleep(request.app[_LATENCY_S])
    number = request.match_info["tracking_number"]
    if not _TRACKING_NUMBER.fullmatch(number):
        return web.json_response(_not_found(number), status=404)
    return web.json_response(tracking_for(number).model_dump(mode="json"))


async def _track_batch(request: web.Request) -> web.Response:
    try:
        body = await request.json()
        numbers = body["tracking_numbers"]
        if not isinstance(numbers, list) or not all(isinstance(n, str) for n in numbers):
            raise TypeError
    except (ValueError, KeyError, TypeError):
        message = 'expected {"tracking_numbers": ["TRK..."]}'
        return web.json_response({"error": "bad_request", "message": message}, status=400)
    if len(numbers) > MAX_BATCH:
        message = f"at most {MAX_BATCH} tracking numbers per batch, got {len(numbers)}"
        return web.json_response({"error": "bad_request", "message": message}, status=400)
    await asyncio.sleep(request.app[_LATENCY_S])
    results = [
        {"tracking": tracking_for(n).model_dump(mode="json")}
        if _TRACKING_NUMBER.fullmatch(n)
        else _not_found(n)
        for n in numbers
    ]
    return web.json_response({"results": results})


async def _stats(request: web.Request) -> web.Response:
    return web.json_response(request.app[_STATS].as_json())


async def _healthz(_request: web.Request) -> web.Response:
    return web.json_response({"status": "ok"})


def build_app(latency_ms: int) -> web.Application:
    """The carrier application; each tracking answer waits `latency_ms` first."""
    if latency_ms < 0:
        raise ValueError(f"latency_ms must be >= 0, got {latency_ms}")
    app = web.Application(middlewares=[_count])
    app[_LATENCY_S] = latency_ms / 1000
    app[_STATS] = _Stats()
    app.router.add_post("/v1/tracking:batch", _track_batch)
    app.router.add_get("/v1/tracking/{tracking_number}", _track)
    app.router.add_get("/healthz", _healthz)
    app.router.add_get("/stats", _stats)
    return app


@asynccontextmanager
async def serving(latency_ms: int) -> AsyncIterator[str]:
    """The carrier on a free local port, for tests and benchmarks; yields its base URL."""
    runner = web.AppRunner(build_app(latency_ms), access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        await runner.cleanup()


async def serve(host: str, port: int, latency_ms: int) -> None:
    """Serve the carrier application until cancelled.

    Raises:
        OSError: The address cannot be bound (errno EADDRINUSE when the port is taken).
    """
    runner = web.AppRunner(build_app(latency_ms), access_log=None)
    await runner.setup()
    try:
        await web.TCPSite(runner, host, port).start()
        await asyncio.Event().wait()
    finally:
        await runner.cleanup()


async def _serve_until_signalled(host: str, port: int, latency_ms: int) -> None:
    task = asyncio.create_task(serve(host, port, latency_ms))
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, task.cancel)
    try:
        await task
    except asyncio.CancelledError:
        pass


def main(argv: list[str] | None = None) -> int:
    """Entry point of `python -m agentkeel.examples.shop.carrier`; returns the exit status."""
    parser = argparse.ArgumentParser(
        prog="python -m agentkeel.examples.shop.carrier",
        description="Local carrier-tracking HTTP service.",
    )
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on")
    parser.add_argument("--port", type=int, default=8787, help="port to listen on")
    parser.add_argument(
        "--latency-ms", type=int, default=40, help="delay of each tracking answer, in ms"
    )
    args = parser.parse_args(argv)
    if args.latency_ms < 0:
        parser.error("--latency-ms must be >= 0")
    try:
        asyncio.run(_serve_until_signalled(args.host, args.port, args.latency_ms))
    except OSError as exc:
        # Binding is the only I/O before serving: say why in one line, not a traceback.
        why = "the port is already in use" if exc.errno == errno.EADDRINUSE else exc.strerror
        print(f"carrier: cannot listen on {args.host}:{args.port}: {why}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
