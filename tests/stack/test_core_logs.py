"""Temporal Core's own log lines (its Rust side) reach the process's log stream as JSON
records of the `temporalio.core` logger, as agentkeel's processes set it up, instead of
Core's ANSI-coloured text beside the JSON. A fresh process: the default runtime is made
once per process, before its first client."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from temporalio.testing import WorkflowEnvironment

from tests.support.paths import ROOT

PROBE = """
import asyncio, sys, uuid
from agentkeel.settings.logging import configure_logging
from agentkeel.settings.metrics import forward_core_logs
configure_logging("info", "json")
forward_core_logs("INFO")  # INFO: a worker's start is logged by Core at that level
from temporalio import activity
from temporalio.client import Client
from temporalio.worker import Worker

@activity.defn
async def idle() -> None: ...

async def main():
    client = await Client.connect(sys.argv[1], namespace=sys.argv[2])
    async with Worker(client, task_queue=f"core-logs-{uuid.uuid4().hex}", activities=[idle]):
        await asyncio.sleep(0.5)

asyncio.run(main())
"""


def test_core_log_lines_are_json_records_of_the_process_stream(
    temporal_env: WorkflowEnvironment,
) -> None:
    client = temporal_env.client
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", PROBE, client.service_client.config.target_host,
         client.namespace],
        capture_output=True, text=True, env=env, cwd=ROOT, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert "\x1b[" not in done.stderr, "no ANSI colour codes in the log stream"
    records = [json.loads(line) for line in done.stderr.splitlines() if line.strip()]
    core = [r for r in records if r["logger"].startswith("temporalio.core")]
    assert core, records
    assert any("Initializing worker" in r["event"] for r in core), core
