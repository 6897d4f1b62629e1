"""The local stack supervisor behind `agentkeel up` / `down` / `demo` and the integration tests.

Each service is the configured one when its setting is given, else a local process that the
supervisor starts, watches and stops (`LocalStack`). The state directory holds the Temporal
database, the embedded Postgres and Redis data, one log file per child, and `stack.pid` /
`endpoints.json`, through which `up --detach`, `down` and `ask` find a running stack.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable

from agentkeel.cli.stack.local import LocalStack, StackEndpoints, child_env
from agentkeel.cli.stack.pids import pid_alive, read_pid_file, started_children, write_pid_file
from agentkeel.cli.stack.placement import untold_environ
from agentkeel.cli.stack.procs import StackError, log_tail
from agentkeel.settings.connections import redact
from agentkeel.settings.event_loop import run as run_loop
from agentkeel.settings.model import Settings

__all__ = [
    "LocalStack",
    "StackEndpoints",
    "StackError",
    "describe",
    "read_endpoints",
    "read_pid_file",
    "run_foreground",
    "start_detached",
    "stop_detached",
    "write_pid_file",
]

DETACHED_READY_S = 180.0
"""How long `up --detach` waits for the background supervisor to report its endpoints."""
DETACHED_STOP_S = 120.0


def describe(endpoints: StackEndpoints) -> str:
    """A short table of what runs where, for the terminal."""
    started = endpoints.ui_url is not None
    temporal = [
        (
            "Temporal gRPC",
            f"{endpoints.temporal_address}  "
            + ("(started here)" if started else "(AGENTKEEL_TEMPORAL_ADDRESS's, not started here)"),
        ),
        ("Temporal Web UI", endpoints.ui_url or "(none: the server was not started here)"),
    ]
    if endpoints.temporal_named:  # the operator's server: say so, and how it is reached
        named = f"{endpoints.temporal_named}: the profile's server, not started here"
        temporal = [("Temporal", named)]
    rows = [
        *temporal,
        ("Postgres", redact(endpoints.database_url)),
        ("Redis", endpoints.redis_url),
        *endpoints.services.items(),
    ]
    if endpoints.gateway_url:
        rows.append(("Gateway", f"{endpoints.gateway_url}  (API: {endpoints.gateway_url}/docs)"))
    rows += [(f"Metrics ({name})", url) for name, url in endpoints.metrics.items()]
    rows += [(name, f"pid {pid}") for name, pid in endpoints.pids.items()]
    rows.append(("logs", endpoints.log_dir))
    width = max(len(name) for name, _ in rows)
    notes = [f"  note: {note}" for note in endpoints.notes]
    return "\n".join([*notes, *(f"  {name:<{width}}  {value}" for name, value in rows)])


def run_foreground(settings: Settings) -> int:
    """Run the whole stack (with workers) until SIGINT/SIGTERM; 0 on a clean stop, 1 on error."""
    try:
        return run_loop(_serve(settings), settings.event_loop)
    except StackError as exc:
        print(f"agentkeel up: {exc}", file=sys.stderr)
        return 1


async def _serve(settings: Settings) -> int:
    loop = asyncio.get_running_loop()
    stopping = asyncio.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stopping.set)
    stack = LocalStack(settings, start_workers=True)
    starting = asyncio.create_task(stack.start())
    signalled = asyncio.create_task(stopping.wait())
    try:
        await asyncio.wait({starting, signalled}, return_when=asyncio.FIRST_COMPLETED)
        if not starting.done():  # stopped while starting: start() cleans up on cancel
            starting.cancel()
            with contextlib.suppress(asyncio.CancelledError, StackError):
                await starting
            return 0
        endpoints = starting.result()
        print(f"agentkeel stack is up (Ctrl-C stops it)\n{describe(endpoints)}", flush=True)
        await signalled
        print("agentkeel: stopping the stack ...", flush=True)
        return 0
    finally:
        signalled.cancel()
        await stack.stop()


def read_endpoints(settings: Settings) -> StackEndpoints | None:
    """The endpoints of the stack running from `settings.state_dir`, or None when none runs."""
    pid = read_pid_file(settings.state_dir / "stack.pid")
    if pid is None:
        return None
    try:
        endpoints = StackEndpoints.from_json((settings.state_dir / "endpoints.json").read_text())
    except (OSError, ValueError, TypeError, KeyError):
        return None
    return endpoints if endpoints.pids.get("supervisor") == pid else None


def start_detached(
    settings: Settings, on_wait: Callable[[list[str]], None] | None = None
) -> StackEndpoints:
    """Run `agentkeel up` in the background; return its endpoints once it is ready.

    Returns the running stack's endpoints when one already runs from the state directory.
    `on_wait` is told, while it starts, the names of the processes started so far.
    """
    running = read_endpoints(settings)
    if running is not None:
        return running
    log_path = settings.state_dir / "logs" / "up.log"
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, "ab") as out:
        since = out.tell()  # the tail of a failure shows this run only
        proc = subprocess.Popen(
            [sys.executable, "-m", "agentkeel.cli.main", "up"],
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            env=untold_environ(settings, child_env(settings)),
            start_new_session=True,
        )
    deadline = time.monotonic() + DETACHED_READY_S
    while True:
        endpoints = read_endpoints(settings)
        if endpoints is not None and endpoints.pids.get("supervisor") == proc.pid:
            return endpoints
        if proc.poll() is not None:
            raise StackError(
                f"agentkeel up exited with code {proc.returncode}; "
                f"last log lines ({log_path}):\n{log_tail(log_path, since=since)}"
            )
        if time.monotonic() > deadline:
            stop_detached(settings)
            raise StackError(
                f"the stack was not up after {DETACHED_READY_S:.0f} s; "
                f"last log lines ({log_path}):\n{log_tail(log_path, since=since)}"
            )
        if on_wait is not None:
            on_wait(started_children(settings.state_dir / "children.json"))
        time.sleep(0.2)


def stop_detached(settings: Settings) -> bool:
    """SIGTERM the supervisor named in `stack.pid` and wait; False when none was running."""
    pid_path = settings.state_dir / "stack.pid"
    pid = read_pid_file(pid_path)
    if pid is None:
        pid_path.unlink(missing_ok=True)
        (settings.state_dir / "endpoints.json").unlink(missing_ok=True)
        return False
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + DETACHED_STOP_S
    while pid_alive(pid):
        if time.monotonic() > deadline:
            raise StackError(
                f"the stack supervisor (pid {pid}) did not stop within {DETACHED_STOP_S:.0f} s; "
                f"see {settings.state_dir / 'logs'}"
            )
        time.sleep(0.1)
    pid_path.unlink(missing_ok=True)
    (settings.state_dir / "endpoints.json").unlink(missing_ok=True)
    return True
