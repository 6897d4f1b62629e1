"""A real three-node Redis Cluster, from the machine's `redis-server` and `redis-cli`.

Three primaries, no replicas, on free loopback ports, their state in a temporary folder;
`redis-cli --cluster create` assigns the 16384 slots. Stopped (SIGTERM, then waited on) when
the context ends.
"""

from __future__ import annotations

import random
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

REDIS_SERVER = shutil.which("redis-server", path="/usr/bin") or "/usr/bin/redis-server"
REDIS_CLI = shutil.which("redis-cli", path="/usr/bin") or "/usr/bin/redis-cli"
NODES = 3


def _free_port() -> int:
    """A port free with its cluster bus port (the port + 10000, so below 55536)."""
    while True:
        port = random.randrange(20_000, 45_000)
        try:
            for candidate in (port, port + 10_000):
                with socket.socket() as s:
                    s.bind(("127.0.0.1", candidate))
        except OSError:
            continue
        return port


def _cli(port: int, *args: str) -> str:
    done = subprocess.run(
        [REDIS_CLI, "-p", str(port), *args], capture_output=True, text=True, timeout=30
    )
    return done.stdout + done.stderr


def _wait(ready: object, what: str, timeout_s: float = 20) -> None:
    deadline = time.monotonic() + timeout_s
    while not ready():  # type: ignore[operator]
        if time.monotonic() > deadline:
            raise RuntimeError(f"redis cluster: {what} within {timeout_s:.0f} s")
        time.sleep(0.05)


@dataclass
class Cluster:
    ports: list[int]
    processes: dict[int, subprocess.Popen[bytes]] = field(default_factory=dict)

    @property
    def url(self) -> str:
        """The first node's URL: any node names the cluster."""
        return f"redis://127.0.0.1:{self.ports[0]}/0"

    def stop(self, port: int) -> None:
        """Stop one node: its slots stop answering."""
        _stop(self.processes[port])


@contextmanager
def redis_cluster(folder: Path) -> Iterator[Cluster]:
    """Start the cluster and yield it."""
    cluster = Cluster([_free_port() for _ in range(NODES)])
    ports = cluster.ports
    with ExitStack() as stack:
        for port in ports:
            home = folder / str(port)
            home.mkdir(parents=True)
            proc = subprocess.Popen(
                [
                    REDIS_SERVER, "--port", str(port), "--bind", "127.0.0.1",
                    "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
                    "--cluster-node-timeout", "2000", "--dir", str(home),
                    "--save", "", "--appendonly", "no",
                ],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )  # fmt: skip
            cluster.processes[port] = proc
            stack.callback(_stop, proc)
        for port in ports:
            _wait(lambda p=port: "PONG" in _cli(p, "ping"), f"node {port} did not answer")
        created = _cli(
            ports[0],
            "--cluster", "create", *(f"127.0.0.1:{p}" for p in ports),
            "--cluster-replicas", "0", "--cluster-yes",
        )  # fmt: skip
        if "All 16384 slots covered" not in created:
            raise RuntimeError(f"redis-cli --cluster create failed: {created}")
        for port in ports:
            _wait(
                lambda p=port: "cluster_state:ok" in _cli(p, "cluster", "info"),
                f"node {port} did not see the cluster ok",
            )
        yield cluster


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
