"""The carrier service's command line: a port in use is one line and status 1."""

from __future__ import annotations

import asyncio
import socket
import sys


async def test_carrier_cli_reports_a_port_in_use() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        proc = await asyncio.create_subprocess_exec(
            *(sys.executable, "-m", "agentkeel.examples.shop.carrier", "--port", str(port)),
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        stdout, stderr = await asyncio.wait_for(proc.communicate(), timeout=30)
    assert proc.returncode == 1
    assert stdout == b""
    assert (
        stderr.decode().strip()
        == f"carrier: cannot listen on 127.0.0.1:{port}: the port is already in use"
    )
