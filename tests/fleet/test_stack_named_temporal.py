"""`agentkeel up` with a Temporal of the operator's, named by the Temporal profile
(`TEMPORAL_ADDRESS`, TLS, an API key): it starts no dev server, its workers and gateway
connect to the named server with its credentials, and its output says so.

The named server is the session's dev server on its own port, reached through nginx
terminating mTLS and checking an API key (`tests.support.tls_proxy`) where nginx is installed, else
directly; a named server that does not answer stops `up` with no dev server started.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from temporalio.api.enums.v1 import TaskQueueType
from temporalio.api.taskqueue.v1 import TaskQueue
from temporalio.api.workflowservice.v1 import DescribeTaskQueueRequest
from temporalio.client import Client
from temporalio.testing import WorkflowEnvironment

from agentkeel.cli.stack.supervisor import LocalStack, StackError
from agentkeel.settings.model import Settings
from agentkeel.settings.ports import free_port
from tests.support.tls_proxy import NGINX, make_pki, tls_proxy

API_KEY = "ak-named-0123456789"
UP_S = 240.0
"""Longest `up` may take to start its workers and gateway on a busy machine."""


@pytest.fixture
def named_temporal(temporal_env: WorkflowEnvironment, tmp_path: Path) -> Iterator[dict[str, str]]:
    """The `TEMPORAL_*` variables naming the session's dev server: through mTLS and an API
    key where nginx is installed."""
    upstream = temporal_env.client.service_client.config.target_host
    if not os.access(NGINX, os.X_OK):
        yield {"TEMPORAL_ADDRESS": upstream, "TEMPORAL_NAMESPACE": "default"}
        return
    pki = make_pki(tmp_path / "pki")
    with tls_proxy(tmp_path / "nginx", upstream, pki, api_key=API_KEY) as address:
        yield pki.temporal_env(address, API_KEY)


def _up_env(named: dict[str, str], state_dir: Path, database_url: str, redis_url: str) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TEMPORAL_", "AGENTKEEL_"))}
    return env | named | {
        "AGENTKEEL_STATE_DIR": str(state_dir),
        "AGENTKEEL_DATABASE_URL": database_url,
        "AGENTKEEL_REDIS_URL": redis_url,
        "AGENTKEEL_TASK_QUEUE": f"named-{uuid.uuid4().hex[:8]}",
        "AGENTKEEL_GATEWAY_ADDRESS": f"127.0.0.1:{free_port()}",
        "AGENTKEEL_TEMPORAL_UI_PORT": str(free_port()),
        "AGENTKEEL_METRICS_ADDRESS": "off",
        "AGENTKEEL_SEMANTIC_CACHE": "off",  # the embedder costs seconds: not under test
        "PYTHONUNBUFFERED": "1",
    }  # fmt: skip


async def _pollers(client: Client, queue: str) -> list[str]:
    described = await client.workflow_service.describe_task_queue(
        DescribeTaskQueueRequest(
            namespace="default",
            task_queue=TaskQueue(name=queue),
            task_queue_type=TaskQueueType.TASK_QUEUE_TYPE_ACTIVITY,
        )
    )
    return [p.identity for p in described.pollers]


async def test_up_connects_its_workers_to_the_named_server_and_starts_none(
    named_temporal: dict[str, str],
    client: Client,
    database_url: str,
    redis_url: str,
    tmp_path: Path,
) -> None:
    state_dir = tmp_path / "state"
    env = _up_env(named_temporal, state_dir, database_url, redis_url)
    output = tmp_path / "up.out"
    with output.open("wb") as out:
        up = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "agentkeel.cli.main", "up",
            env=env, stdout=out, stderr=asyncio.subprocess.STDOUT,
        )  # fmt: skip
    try:
        deadline = time.monotonic() + UP_S
        while "agentkeel stack is up" not in output.read_text(errors="replace"):
            assert up.returncode is None, output.read_text(errors="replace")[-3000:]
            assert time.monotonic() < deadline, output.read_text(errors="replace")[-3000:]
            await asyncio.sleep(0.25)
        said = output.read_text(errors="replace")
        address = named_temporal["TEMPORAL_ADDRESS"]
        assert f"{address} (namespace 'default')" in said
        assert "the profile's server, not started here" in said
        if "TEMPORAL_API_KEY" in named_temporal:
            assert "with mTLS and an API key" in said
        pids = json.loads((state_dir / "endpoints.json").read_text())["pids"]
        assert "temporal" not in pids, "no dev server started"
        assert {"worker cpu", "worker inference", "gateway"} <= set(pids)
        # The workers, given the proxy's address, poll the server behind it.
        queue = env["AGENTKEEL_TASK_QUEUE"]
        for name, on in (("worker cpu", queue), ("worker inference", f"{queue}-inference")):
            assert any(i.startswith(f"{pids[name]}@") for i in await _pollers(client, on)), name
    finally:
        if up.returncode is None:
            up.send_signal(signal.SIGTERM)
        try:
            await asyncio.wait_for(up.wait(), 60)
        except TimeoutError:
            up.kill()
            await up.wait()


async def test_a_named_server_that_does_not_answer_stops_up_and_starts_no_server(
    tmp_path: Path, database_url: str, redis_url: str
) -> None:
    silent = f"127.0.0.1:{free_port()}"
    settings = Settings.from_env(
        {
            "TEMPORAL_ADDRESS": silent,
            "AGENTKEEL_STATE_DIR": str(tmp_path),
            "AGENTKEEL_DATABASE_URL": database_url,
            "AGENTKEEL_REDIS_URL": redis_url,
        }
    )
    assert settings.temporal_is_named()
    assert not Settings.from_env({"AGENTKEEL_TEMPORAL_ADDRESS": silent}).temporal_is_named()
    with pytest.raises(StackError, match=rf"Temporal at {silent} .*no dev server is started"):
        await LocalStack(settings, start_workers=False).start()
    assert not (tmp_path / "temporal.db").exists(), "no dev server started"
    assert not (tmp_path / "logs").exists(), "checked before anything starts"
