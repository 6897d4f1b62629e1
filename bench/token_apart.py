"""The token-timed model server in a process of its own, as a model server is deployed.

In the benchmark's own process the server's work (a streamed answer is an HTTP write per
token) would run on the event loop of the workers it answers, and delay whichever system
streams; a deployed model server runs on machines of its own. `bench.peers` starts it here
(`--model-server apart`, the default): `python -m bench.token_server` on a free port, its
speed set and its requests counted over HTTP (`/bench/speed`, `/bench/requests`).
"""

from __future__ import annotations

import asyncio
import dataclasses
import re
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import aiohttp

from bench.token_server import Speed

STARTUP_S = 30.0
_URL = re.compile(r"token-timed model server at (\S+)")


class RemoteTokenServer:
    """The server process's controls: its speed, and the requests it has answered."""

    def __init__(self, url: str, session: aiohttp.ClientSession) -> None:
        self._root = url.removesuffix("/v1")
        self._session = session

    async def set_speed(self, speed: Speed) -> None:
        async with self._session.put(
            f"{self._root}/bench/speed", json=dataclasses.asdict(speed)
        ) as reply:
            reply.raise_for_status()

    async def requests(self) -> int:
        async with self._session.get(f"{self._root}/bench/requests") as reply:
            reply.raise_for_status()
            count: int = (await reply.json())["requests"]
            return count


@asynccontextmanager
async def served_apart(
    speed: Speed, *, route_confidence: float
) -> AsyncIterator[tuple[str, RemoteTokenServer]]:
    """`python -m bench.token_server` on a free port for the block: its `/v1` URL and its
    controls. A server that does not start within `STARTUP_S` fails the benchmark."""
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "bench.token_server",
        "--port",
        "0",
        "--speed",
        speed.name,
        "--route-confidence",
        str(route_confidence),
        stdout=asyncio.subprocess.PIPE,
    )
    draining: asyncio.Task[None] | None = None
    try:
        url = await asyncio.wait_for(_announced_url(process), STARTUP_S)
        draining = asyncio.create_task(_drain(process))  # a full pipe would stall it
        async with aiohttp.ClientSession() as session:
            remote = RemoteTokenServer(url, session)
            await remote.set_speed(speed)
            yield url, remote
    finally:
        if process.returncode is None:
            process.terminate()
            await process.wait()
        if draining is not None:
            await draining


async def _announced_url(process: asyncio.subprocess.Process) -> str:
    assert process.stdout is not None
    while line := await process.stdout.readline():
        found = _URL.search(line.decode())
        if found:
            return found.group(1)
    raise RuntimeError(f"the token server exited ({process.returncode}) before serving")


async def _drain(process: asyncio.subprocess.Process) -> None:
    assert process.stdout is not None
    while await process.stdout.read(65536):
        pass
