"""Several worker processes of each kind against one stack: a fleet on one machine.

Each worker is `agentkeel worker cpu|inference` as a child process, with the stack's
settings in its environment (`child_env`); its Temporal identity is `<pid>@<host>`, so a
run's history says which worker did each step. Used by `bench.fleet` and the fleet tests;
in production the processes are pods or compose replicas (docs/deployment.md).
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from temporalio.api.enums.v1 import TaskQueueType
from temporalio.api.taskqueue.v1 import TaskQueue
from temporalio.api.workflowservice.v1 import DescribeTaskQueueRequest
from temporalio.client import Client

from agentkeel.settings.model import ENV_PREFIX, Settings, StartupError
from agentkeel.settings.ports import free_port

WorkerKind = Literal["cpu", "inference"]
READY_S = 180.0
"""Longest a worker of the fleet may take to poll its queue (imports on a busy machine)."""


@dataclass(eq=False)  # one worker is one process: compared (and hashed) by identity
class FleetWorker:
    kind: WorkerKind
    process: subprocess.Popen[bytes]
    log: Path
    health: str
    """Its `AGENTKEEL_HEALTH_ADDRESS` (`workers.readiness`)."""

    async def ready(self) -> bool:
        """Whether its `/ready` answers 200 (models, caches and indexes loaded, polling)."""
        host, _, port = self.health.rpartition(":")
        try:
            reader, writer = await asyncio.open_connection(host, int(port))
        except OSError:
            return False
        try:
            writer.write(b"GET /ready HTTP/1.0\r\n\r\n")
            await writer.drain()
            return (await reader.readline()).startswith(b"HTTP/1.0 200")
        finally:
            writer.close()

    @property
    def pid(self) -> int:
        return self.process.pid

    def owns(self, identity: str) -> bool:
        """Whether a history event's or poller's identity is this worker's."""
        return identity.startswith(f"{self.pid}@")

    def kill(self, sig: int = signal.SIGKILL) -> None:
        if self.process.poll() is None:
            os.kill(self.pid, sig)
            self.process.wait()


@dataclass
class WorkerFleet:
    settings: Settings
    env: Mapping[str, str]
    """The workers' environment: the settings as `AGENTKEEL_*`, the domain's variables."""
    folder: Path
    """Where each worker's log is written."""
    workers: list[FleetWorker] = field(default_factory=list)

    def start(self, kind: WorkerKind, count: int) -> list[FleetWorker]:
        started = []
        for _ in range(count):
            log = self.folder / f"worker-{kind}-{len(self.workers)}.log"
            health = f"127.0.0.1:{free_port()}"
            process = subprocess.Popen(
                [sys.executable, "-m", "agentkeel.workers", kind],
                env={**self.env, f"{ENV_PREFIX}HEALTH_ADDRESS": health},
                stdout=log.open("wb"),
                stderr=subprocess.STDOUT,
            )
            worker = FleetWorker(kind, process, log, health)
            self.workers.append(worker)
            started.append(worker)
        return started

    def of_kind(self, kind: WorkerKind) -> list[FleetWorker]:
        return [w for w in self.workers if w.kind == kind]

    def owner(self, identity: str) -> FleetWorker | None:
        return next((w for w in self.workers if w.owns(identity)), None)

    async def wait_polling(self, client: Client, timeout_s: float = READY_S) -> None:
        """Until every live worker is ready and polls its queue; a worker that exits is a
        `StartupError` with the end of its log."""
        deadline = time.monotonic() + timeout_s
        for worker in self.workers:
            queue = (
                self.settings.task_queue
                if worker.kind == "cpu"
                else self.settings.inference_task_queue
            )
            while not (await worker.ready() and await self._polls(client, queue, worker)):
                if worker.process.poll() is not None or time.monotonic() > deadline:
                    tail = worker.log.read_text(errors="replace")[-2000:]
                    raise StartupError(f"worker {worker.kind} {worker.pid} did not poll: {tail}")
                await asyncio.sleep(0.25)

    async def _polls(self, client: Client, queue: str, worker: FleetWorker) -> bool:
        described = await client.workflow_service.describe_task_queue(
            DescribeTaskQueueRequest(
                namespace=client.namespace,
                task_queue=TaskQueue(name=queue),
                task_queue_type=TaskQueueType.TASK_QUEUE_TYPE_ACTIVITY,
            )
        )
        return any(worker.owns(p.identity) for p in described.pollers)

    def stop(self, grace_s: float = 15.0) -> None:
        """SIGTERM every live worker (they drain), SIGKILL what is left after `grace_s`."""
        for worker in self.workers:
            if worker.process.poll() is None:
                worker.process.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + grace_s
        for worker in self.workers:
            try:
                worker.process.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                worker.kill()
