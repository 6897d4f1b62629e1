"""`LocalStack`: starts what the settings do not point at, in one process tree, and stops it."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
from contextlib import AsyncExitStack
from dataclasses import asdict, dataclass, field, fields
from functools import partial
from pathlib import Path
from typing import Any

import structlog

from agentkeel.cli.stack import services
from agentkeel.cli.stack import temporal as stack_temporal
from agentkeel.cli.stack.pids import (
    kill_orphans,
    read_pid_file,
    record_children,
    write_pid_file,
)
from agentkeel.cli.stack.placement import place
from agentkeel.cli.stack.procs import Child, StackError, find_temporal_binary, split_host_port
from agentkeel.cli.stack.watchdog import Watchdog
from agentkeel.settings.domain_assembly import serve_domain
from agentkeel.settings.metrics import stack_metrics_addresses
from agentkeel.settings.model import ENV_PREFIX, Settings
from agentkeel.settings.ports import ensure_port_free, free_port, port_answers

log = structlog.get_logger(__name__)


@dataclass
class StackEndpoints:
    """What runs where. Written to `<state_dir>/endpoints.json` while a stack is up."""

    temporal_address: str
    ui_url: str | None
    database_url: str
    redis_url: str
    services: dict[str, str] = field(default_factory=dict)
    """The domain's services the stack points its workers at: setting variable -> URL."""
    log_dir: str = ""
    gateway_url: str = ""
    """The HTTP gateway (`gateway`), when the stack started one."""
    metrics: dict[str, str] = field(default_factory=dict)
    """Prometheus metrics URLs by worker (`worker cpu`, `worker inference`)."""
    temporal_named: str = ""
    """How the Temporal profile's server is reached (`Settings.temporal_described`), when
    the stack connects to one instead of starting a dev server; empty otherwise."""
    notes: list[str] = field(default_factory=list)
    """What `up` chose for the user: a taken default port moved to a free one (`placement`)."""
    pids: dict[str, int] = field(default_factory=dict)
    """Child processes by name (`temporal`, `redis`, a domain's stand-ins, `worker cpu`, ...), plus
    `supervisor`, the process that owns them."""

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2)

    @classmethod
    def from_json(cls, text: str) -> StackEndpoints:
        data = json.loads(text)
        return cls(**{f.name: data[f.name] for f in fields(cls) if f.name in data})


class LocalStack:
    """Starts the services the settings do not point at, and stops them again.

    Usable as `async with LocalStack(settings) as endpoints: ...`.
    """

    def __init__(self, settings: Settings, *, start_workers: bool = True) -> None:
        self.settings = settings
        self.start_workers = start_workers
        self._exits: AsyncExitStack | None = None
        self._endpoints: StackEndpoints | None = None

    @property
    def _pid_path(self) -> Path:
        return self.settings.state_dir / "stack.pid"

    @property
    def _endpoints_path(self) -> Path:
        return self.settings.state_dir / "endpoints.json"

    async def start(self) -> StackEndpoints:
        """Start or check every service; on any failure stop what was started and raise."""
        if self._endpoints is not None:
            return self._endpoints
        s = self.settings
        domain = serve_domain(s)
        s.state_dir.mkdir(parents=True, exist_ok=True)
        self._claim_state_dir()
        self._exits = exits = AsyncExitStack()
        exits.callback(self._release_state_dir)
        children_path = s.state_dir / "children.json"
        exits.callback(children_path.unlink, missing_ok=True)
        launch = services.Launch(s, exits, on_child=partial(record_children, children_path))
        try:
            ended = await asyncio.to_thread(kill_orphans, children_path)
            if ended:
                log.warning("stack.orphans_stopped", children=ended)
            s, notes = place(s, workers=self.start_workers)
            self.settings = launch.settings = s
            for note in notes:
                log.warning("stack.port_moved", note=note)
            _check_ports(s, workers=self.start_workers)
            # The profile's server is only connected to: checked before anything starts.
            named = await stack_temporal.temporal(launch) if s.temporal_is_named() else None
            try:
                async with asyncio.TaskGroup() as tg:
                    temporal = None if named else tg.create_task(stack_temporal.temporal(launch))
                    database = tg.create_task(services.postgres(launch))
                    redis = tg.create_task(services.redis(launch))
                    stand_ins = [
                        tg.create_task(services.local_service(launch, child_env(s), ls, domain))
                        for ls in domain.local_services
                    ]
            except BaseExceptionGroup as group:
                raise _first_stack_error(group) from None
            await services.migrate_and_seed(database.result(), domain)
            if named is None:
                assert temporal is not None  # started in the group above
                named = temporal.result()
            address, ui_url = named
            endpoints = StackEndpoints(
                address,
                ui_url,
                database.result(),
                redis.result(),
                services=dict(task.result() for task in stand_ins),
                log_dir=str(launch.log_dir),
                temporal_named=s.temporal_described() if s.temporal_is_named() else "",
                notes=notes,
            )
            if self.start_workers:
                await stack_temporal.workers(launch, child_env(s, endpoints))
                endpoints.gateway_url = await services.gateway(launch, child_env(s, endpoints))
                endpoints.metrics = {
                    f"worker {kind}": f"http://{address}/metrics"
                    for kind, address in stack_metrics_addresses(s).items()
                    if address is not None
                }
        except BaseException:
            self._exits = None
            await exits.aclose()
            raise
        endpoints.pids = {c.name: c.pid for c in launch.children} | {"supervisor": os.getpid()}
        _write_private(self._endpoints_path, endpoints.to_json())
        exits.callback(self._endpoints_path.unlink, missing_ok=True)

        def restarted(child: Child) -> None:
            endpoints.pids[child.name] = child.pid
            _write_private(self._endpoints_path, endpoints.to_json())
            record_children(children_path, launch.children)

        watchdog = Watchdog(launch.children, s.state_dir / "status.json", on_restart=restarted)
        watchdog.start()
        # Pushed last, so it runs first: exits while the stack stops are not crashes.
        exits.push_async_callback(watchdog.stop)
        self._endpoints = endpoints
        log.info("stack.up", **{k: v for k, v in asdict(endpoints).items() if k != "pids"})
        return endpoints

    async def stop(self) -> None:
        """Stop the children in reverse order (SIGTERM, then SIGKILL) and the embedded servers."""
        exits, self._exits, self._endpoints = self._exits, None, None
        if exits is not None:
            await exits.aclose()
            log.info("stack.down")

    async def __aenter__(self) -> StackEndpoints:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    def _claim_state_dir(self) -> None:
        owner = read_pid_file(self._pid_path)
        if owner is not None and owner != os.getpid():
            raise StackError(
                f"a stack already runs from {self.settings.state_dir} (pid {owner}); "
                "stop it with `agentkeel down`"
            )
        write_pid_file(self._pid_path)

    def _release_state_dir(self) -> None:
        with contextlib.suppress(OSError, ValueError):
            if int(self._pid_path.read_text()) == os.getpid():
                self._pid_path.unlink()


def embedded_settings(state_dir: Path, **overrides: Any) -> Settings:
    """Settings for a whole embedded stack (Postgres, Redis, dev server, the domain's
    stand-ins) in `state_dir` on free ports, beside any other: for the fault tests and
    `bench.chaos`."""
    base: dict[str, Any] = {
        "database_url": None,
        "redis_url": None,
        "temporal_address": f"127.0.0.1:{free_port()}",
        "temporal_ui_port": free_port(),
        "gateway_address": f"127.0.0.1:{free_port()}",
        "state_dir": state_dir,
    }
    return Settings(**(base | overrides))


def child_env(settings: Settings, endpoints: StackEndpoints | None = None) -> dict[str, str]:
    """This process's environment with every setting (and the resolved URLs) as `AGENTKEEL_*`."""
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    for key, value in settings.to_env().items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = value
    if endpoints is not None:
        env[ENV_PREFIX + "TEMPORAL_ADDRESS"] = endpoints.temporal_address
        env[ENV_PREFIX + "DATABASE_URL"] = endpoints.database_url
        env[ENV_PREFIX + "REDIS_URL"] = endpoints.redis_url
        env.update(endpoints.services)
    return env


def _check_ports(s: Settings, *, workers: bool) -> None:
    # Before anything starts, so that a taken port costs nothing to undo.
    host, port = split_host_port(s.temporal_address, 7233)
    if not s.temporal_is_named() and not port_answers(host, port):
        find_temporal_binary()
        ensure_port_free(host, port, "Temporal gRPC", "AGENTKEEL_TEMPORAL_ADDRESS")
        ensure_port_free(host, s.temporal_ui_port, "Temporal Web UI", "AGENTKEEL_TEMPORAL_UI_PORT")
    if workers:
        host, port = split_host_port(s.gateway_address, 8080)
        ensure_port_free(host, port, "gateway", "AGENTKEEL_GATEWAY_ADDRESS")
        for kind, address in stack_metrics_addresses(s).items():
            if address is not None:
                host, port = split_host_port(address, 0)
                ensure_port_free(
                    host, port, f"metrics of the {kind} worker", "AGENTKEEL_METRICS_ADDRESS"
                )


def _first_stack_error(group: BaseExceptionGroup) -> BaseException:
    stack_errors, _ = group.split(StackError)
    if stack_errors is None:
        return group
    first: BaseException = stack_errors
    while isinstance(first, BaseExceptionGroup):
        first = first.exceptions[0]
    return first


def _write_private(path: Path, text: str) -> None:
    # The DSN may carry a password: owner-only, replaced atomically.
    tmp = path.with_suffix(".tmp")
    tmp.write_text(text)
    tmp.chmod(0o600)
    tmp.replace(path)
