"""`agentkeel` run as a user runs it: a child process, its exit status and its output."""

from __future__ import annotations

import asyncio
import os
import sys


async def _agentkeel(*args: str, env: dict[str, str]) -> tuple[int, str, str]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "agentkeel.cli.main",
        *args,
        env={**os.environ, "AGENTKEEL_LOG_LEVEL": "warning", **env},
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(proc.communicate(), 120)
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()
