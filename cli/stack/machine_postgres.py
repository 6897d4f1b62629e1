"""An embedded Postgres from the machine's own PostgreSQL binaries (`initdb`, `pg_ctl`).

Used by `agentkeel up` where the `pgserver` wheel does not exist (Python 3.13): the same
layout (a data directory in the state dir, a unix socket only, trust auth for `postgres`),
started and stopped with `pg_ctl` like pgserver does. Postgres refuses to run as root, so
as root it runs as the `postgres` system user that the distributions' packages create.
"""

from __future__ import annotations

import glob
import hashlib
import os
import pwd
import shutil
import stat
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from agentkeel.cli.stack.procs import StackError

INSTALL_HINT = (
    "install PostgreSQL's server binaries (Debian/Ubuntu: apt install postgresql; Fedora: "
    "dnf install postgresql-server; macOS: brew install postgresql) or set "
    "AGENTKEEL_DATABASE_URL to a running server"
)
PORT = 5432
"""Names the socket file only: the server listens on no TCP address."""


def socket_dir_for(pgdata: Path) -> Path:
    """Beside the data directory when the socket's path fits `sun_path` (about 107 bytes), else a
    short directory in /tmp named after it."""
    wanted = pgdata.with_name(pgdata.name + "-socket")  # initdb wants its directory empty
    if len(str(wanted / f".s.PGSQL.{PORT}")) < 100:
        return wanted
    return Path(tempfile.gettempdir()) / f"agentkeel-pgsock-{_tag(wanted)}"


def _private_dir(path: Path, mode: int = 0o700) -> None:
    """Make `path`, or accept it when it is a directory (not a link) owned by this user or
    by `postgres`; anything else is refused."""
    try:
        os.mkdir(path, mode)
        return
    except FileExistsError:
        pass
    info = os.lstat(path)
    owners = {os.geteuid()}
    try:
        owners.add(pwd.getpwnam("postgres").pw_uid)
    except KeyError:
        pass
    if not stat.S_ISDIR(info.st_mode) or info.st_uid not in owners:
        raise StackError(f"refusing {path}: not a directory of this user or of postgres")


def _tag(path: Path) -> str:
    return hashlib.sha256(str(path).encode()).hexdigest()[:12]


def _postgres_can_enter(directory: Path) -> bool:
    probe = ["runuser", "-u", "postgres", "--", "test", "-x", str(directory)]
    try:
        return subprocess.run(probe, capture_output=True, timeout=10).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


def find_bindir() -> Path | None:
    """Where `initdb` and `pg_ctl` are: on PATH, from `pg_config`, or Debian's layout."""
    on_path = shutil.which("initdb")
    if on_path and shutil.which("pg_ctl"):
        return Path(on_path).parent
    pg_config = shutil.which("pg_config")
    if pg_config:
        try:
            out = subprocess.run(
                [pg_config, "--bindir"], capture_output=True, text=True, timeout=10, check=True
            )
            bindir = Path(out.stdout.strip())
            if (bindir / "initdb").exists():
                return bindir
        except (OSError, subprocess.SubprocessError):
            pass
    versions = sorted(
        glob.glob("/usr/lib/postgresql/*/bin/initdb"),
        key=lambda p: int(Path(p).parent.parent.name.split(".")[0] or 0),
    )
    return Path(versions[-1]).parent if versions else None


@dataclass
class MachinePostgres:
    pgdata: Path
    socket_dir: Path
    bindir: Path

    @classmethod
    def in_dir(cls, pgdata: Path, socket_dir: Path) -> MachinePostgres:
        bindir = find_bindir()
        if bindir is None:
            raise StackError(
                f"no embedded Postgres for this Python and no initdb found: {INSTALL_HINT}"
            )
        if os.geteuid() == 0 and not _postgres_can_enter(pgdata.parent):
            # As root in a directory the `postgres` user cannot enter (a private temporary
            # directory, say): the data goes to /tmp instead, at a path named after the one
            # asked for, so the same state directory finds it again.
            base = Path(tempfile.gettempdir()) / f"agentkeel-pg-{_tag(pgdata)}"
            _private_dir(base, mode=0o755)
            return cls(base / "data", base / "socket", bindir)
        return cls(pgdata, socket_dir, bindir)

    @property
    def dsn(self) -> str:
        return f"postgresql://postgres@/postgres?host={self.socket_dir}&port={PORT}"

    def start(self) -> None:
        self.pgdata.parent.mkdir(parents=True, exist_ok=True)
        # Owned by us (or by `postgres`), never a link: anyone who could put the socket
        # directory in place would be a superuser of a server with trust auth.
        _private_dir(self.pgdata)
        _private_dir(self.socket_dir)
        self._own(self.pgdata, self.socket_dir)
        if not (self.pgdata / "PG_VERSION").exists():
            self._run(
                "initdb", "-D", str(self.pgdata), "-U", "postgres", "--auth=trust", "-E", "UTF8"
            )
        if self._running():
            return
        options = f"-k {self.socket_dir} -c listen_addresses='' -p {PORT}"
        log = self.pgdata / "log"
        self._run("pg_ctl", "-D", str(self.pgdata), "-l", str(log), "-o", options, "-w", "start")

    def stop(self) -> None:
        if self._running():
            self._run("pg_ctl", "-D", str(self.pgdata), "-m", "fast", "-w", "stop")

    def restart(self) -> None:
        # With its log file, as at start: a postmaster writing to pg_ctl's output would hold
        # our pipe open, and the call would never return.
        log = str(self.pgdata / "log")
        self._run("pg_ctl", "-D", str(self.pgdata), "-l", log, "-m", "fast", "-w", "restart")

    def _running(self) -> bool:
        if not (self.pgdata / "postmaster.pid").exists():
            return False
        status = self._argv("pg_ctl", "-D", str(self.pgdata), "status")
        try:
            return subprocess.run(status, capture_output=True, timeout=30).returncode == 0
        except (OSError, subprocess.SubprocessError) as exc:
            raise StackError(f"pg_ctl status failed: {exc}") from None

    def _run(self, *args: str) -> None:
        try:
            done = subprocess.run(self._argv(*args), capture_output=True, text=True, timeout=120)
        except (OSError, subprocess.SubprocessError) as exc:
            raise StackError(f"{args[0]} failed: {exc}") from None
        if done.returncode != 0:
            said = (done.stderr or done.stdout).strip().splitlines()[-3:]
            raise StackError(f"{args[0]} failed in {self.pgdata}: {' / '.join(said)}")

    def _argv(self, program: str, *args: str) -> list[str]:
        argv = [str(self.bindir / program), *args]
        if os.geteuid() == 0:
            return ["runuser", "-u", "postgres", "--", *argv]
        return argv

    def _own(self, *paths: Path) -> None:
        if os.geteuid() != 0:
            return
        try:
            user = pwd.getpwnam("postgres")
        except KeyError:
            raise StackError(
                "Postgres will not run as root and there is no 'postgres' user to run it as: "
                "run agentkeel as another user, or " + INSTALL_HINT
            ) from None
        for path in paths:
            os.chown(path, user.pw_uid, user.pw_gid, follow_symlinks=False)
