"""Temporal for the local stack: reuse or start the dev server, start workers, wait for pollers."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from datetime import UTC
from typing import Any

import structlog
from temporalio.api.enums.v1 import TaskQueueType
from temporalio.api.taskqueue.v1 import TaskQueue
from temporalio.api.workflowservice.v1 import DescribeNamespaceRequest, DescribeTaskQueueRequest
from temporalio.client import Client

from agentkeel.cli.stack.placement import told
from agentkeel.cli.stack.procs import (
    Child,
    StackError,
    find_temporal_binary,
    split_host_port,
    wait_for,
)
from agentkeel.cli.stack.services import Launch
from agentkeel.settings.metrics import stack_metrics_addresses
from agentkeel.settings.model import ENV_PREFIX, Settings
from agentkeel.settings.model_tiers import loads_model
from agentkeel.settings.namespace_setup import (
    SearchAttributesError,
    dev_server_flags,
    ensure_search_attributes,
)
from agentkeel.settings.ports import ensure_port_free, port_answers

log = structlog.get_logger(__name__)

SQLITE_PRAGMAS = ("journal_mode=wal", "synchronous=normal")
"""The local server's SQLite settings. With the defaults (a rollback journal, a full sync
on every commit) each workflow task waits for the disk twice; write-ahead logging with
normal sync keeps every commit across a crash of the server (only a crash of the machine
may lose the last ones) at a fraction of the cost: see `python -m bench.load --server`."""
QUEUE_POLL_RPS = 1000
"""Polls per second of the dev server's history queues (transfer, timer, visibility). The
server's default, 20 per shard, is sized for a cluster of hundreds of shards; the dev
server has one, so once a short burst is spent every task waits for the next of 20 polls
a second: about 45 ms between an activity or workflow task being scheduled and a worker
receiving it. Sequential bare runs take 300 ms instead of 55 ms (see the README)."""
TEMPORAL_READY_S = 30.0
WORKER_READY_S = 60.0
MODEL_WORKER_READY_S = 900.0
"""An inference worker loads its vLLM models before it polls: minutes for a large model."""


LANE_CONFIG = (
    # Fairness keys count only with this on (server 1.32: off by default; checked here
    # with a flooding tenant's backlog ahead of another's). Priority keys need nothing.
    "matching.enableFairness=true",
    # Priority and fairness order a backlog within one partition of a task queue; the
    # dev server is one process, and its four partitions only let a low-priority task
    # on a short partition overtake a high-priority one on a long one.
    "matching.numTaskqueueReadPartitions=1",
    "matching.numTaskqueueWritePartitions=1",
)
"""Dynamic config of the dev server for the run lanes of `schemas.lanes`."""


def queue_poll_flags() -> list[str]:
    """`--dynamic-config-value` flags for every dev server agentkeel starts, its tests' and
    benchmarks': the queue poll rates (`QUEUE_POLL_RPS`) and the lanes (`LANE_CONFIG`)."""
    flags: list[str] = []
    for queue in ("transfer", "timer", "visibility"):
        flags += ["--dynamic-config-value", f"history.{queue}ProcessorMaxPollRPS={QUEUE_POLL_RPS}"]
    for value in LANE_CONFIG:
        flags += ["--dynamic-config-value", value]
    return flags


async def temporal(launch: Launch) -> tuple[str, str | None]:
    """Temporal address and Web UI URL: the server already at the address, or a new dev server."""
    s = launch.settings
    host, port = split_host_port(s.temporal_address, 7233)
    if s.temporal_is_named():
        # The operator's server (Temporal Cloud, a cluster): never a dev server in its place.
        client = await _temporal_client(s, named=True)
        await _ensure_search_attributes(client, s.temporal_namespace)
        log.info("stack.temporal_named", temporal=s.temporal_described())
        return s.temporal_address, None
    if port_answers(host, port):
        if not told(s, "temporal_address"):  # `placement.place` moved a taken default
            raise StackError(
                f"{s.temporal_address} answers, a Temporal this stack did not start; set "
                "AGENTKEEL_TEMPORAL_ADDRESS to use it, or to a free port to start one there"
            )
        client = await _temporal_client(s)
        await _ensure_search_attributes(client, s.temporal_namespace)
        log.info("stack.temporal_reused", address=s.temporal_address)
        return s.temporal_address, None
    binary = find_temporal_binary()
    ensure_port_free(host, port, "Temporal gRPC")
    ensure_port_free(host, s.temporal_ui_port, "Temporal Web UI")
    argv = [binary, "server", "start-dev", "--ip", host, "--port", str(port)]
    argv += ["--ui-port", str(s.temporal_ui_port), "--ui-disable-news-fetch"]
    argv += ["--db-filename", str(s.state_dir / "temporal.db"), "--log-level", "warn"]
    for pragma in SQLITE_PRAGMAS:
        argv += ["--sqlite-pragma", pragma]
    argv += queue_poll_flags()
    if s.temporal_namespace != "default":
        argv += ["--namespace", s.temporal_namespace]
    argv += dev_server_flags()
    # The server reads the OpenTelemetry variables too (and refuses `console`): meant for
    # agentkeel's processes, they are not passed on to it.
    server_env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    child = await launch.child("temporal", argv, server_env)

    async def ready() -> bool:
        await _temporal_client(s)
        return True

    await wait_for(
        f"Temporal dev server at {s.temporal_address}",
        ready,
        timeout_s=TEMPORAL_READY_S,
        child=child,
        interval_s=0.25,
    )
    ui_host = "127.0.0.1" if host in ("0.0.0.0", "::") else host
    return s.temporal_address, f"http://{ui_host}:{s.temporal_ui_port}"


async def _temporal_client(s: Settings, *, named: bool = False) -> Client:
    try:
        client = await Client.connect(**s.temporal_connect_options())
        await client.workflow_service.describe_namespace(
            DescribeNamespaceRequest(namespace=s.temporal_namespace)
        )
    except Exception as exc:
        named_by = (
            "; it is the Temporal profile's (TEMPORAL_ADDRESS, TEMPORAL_CONFIG_FILE, "
            "TEMPORAL_PROFILE), so no dev server is started in its place"
            if named
            else ""
        )
        raise StackError(
            f"Temporal at {s.temporal_described()} did not answer: {exc}{named_by}"
        ) from None
    return client


async def _ensure_search_attributes(client: Client, namespace: str) -> None:
    # The workers register them too (and refuse to start if they can't); here it only warns.
    try:
        await ensure_search_attributes(client, namespace)
    except SearchAttributesError as exc:
        log.warning("stack.search_attributes_not_registered", error=str(exc))


async def workers(launch: Launch, env: Mapping[str, str]) -> None:
    """Start the CPU and inference workers and wait until each polls its task queues."""
    s = launch.settings
    client = await _temporal_client(s)
    wf, act = TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW, TaskQueueType.TASK_QUEUE_TYPE_ACTIVITY
    plan = [("cpu", s.task_queue, (wf, act)), ("inference", s.inference_task_queue, (act,))]
    started = []
    metrics = stack_metrics_addresses(s)
    for name, queue, kinds in plan:
        argv = [sys.executable, "-m", "agentkeel.workers", name]
        own = {**env, ENV_PREFIX + "METRICS_ADDRESS": metrics[name] or "off"}
        started.append((await launch.child(f"worker {name}", argv, own), queue, kinds))
    for child, queue, kinds in started:

        async def polled(child: Child = child, queue: str = queue, kinds: Any = kinds) -> bool:
            for kind in kinds:
                resp = await client.workflow_service.describe_task_queue(
                    DescribeTaskQueueRequest(
                        namespace=s.temporal_namespace,
                        task_queue=TaskQueue(name=queue),
                        task_queue_type=kind,
                    )
                )
                # Pollers of an earlier run linger for minutes: count only this child's.
                if not any(
                    p.identity.startswith(f"{child.pid}@")
                    or p.last_access_time.ToDatetime(tzinfo=UTC) >= child.started_at
                    for p in resp.pollers
                ):
                    return False
            return True

        await wait_for(
            f"{child.name} (task queue {queue!r})",
            polled,
            timeout_s=MODEL_WORKER_READY_S
            if queue == s.inference_task_queue and loads_model(s)
            else WORKER_READY_S,
            child=child,
            interval_s=0.25,
        )
