"""`agentkeel status`: what the stack started from this state directory runs, and how well.

Read from the files the supervisor keeps (`endpoints.json`, `status.json`) and, for the
workers, from Temporal itself: a worker counts once it polls its task queue.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import socket
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, timedelta

from temporalio.api.enums.v1 import TaskQueueType
from temporalio.api.taskqueue.v1 import TaskQueue
from temporalio.api.workflowservice.v1 import DescribeTaskQueueRequest
from temporalio.client import Client

from agentkeel.cli.stack.local import StackEndpoints
from agentkeel.cli.stack.pids import pid_alive
from agentkeel.cli.stack.supervisor import describe, read_endpoints
from agentkeel.cli.stack.watchdog import ChildState, ChildStatus, read_status
from agentkeel.settings.model import Settings

TEMPORAL_ANSWER_S = 5.0
POLLER_SEEN_S = 60
"""A poller seen this recently counts as a live worker."""


@dataclass
class QueuePollers:
    task_queue: str
    kind: str
    pollers: list[str] = field(default_factory=list)
    """Identities (`pid@host`) of the workers polling it."""


@dataclass
class StackStatus:
    endpoints: StackEndpoints | None
    children: list[ChildStatus] = field(default_factory=list)
    queues: list[QueuePollers] = field(default_factory=list)
    temporal_error: str | None = None

    @property
    def healthy(self) -> bool:
        return (
            self.endpoints is not None
            and bool(self.children)
            and all(c.state == ChildState.RUNNING and pid_alive(c.pid) for c in self.children)
            and self.temporal_error is None
            and all(q.pollers for q in self.queues)
        )

    def to_json(self) -> str:
        return json.dumps({**asdict(self), "healthy": self.healthy}, indent=2)


async def stack_status(settings: Settings) -> StackStatus:
    endpoints = read_endpoints(settings)
    if endpoints is None:
        return StackStatus(endpoints=None)
    status = StackStatus(endpoints, read_status(settings.state_dir / "status.json"))
    try:
        client = await asyncio.wait_for(
            Client.connect(
                **{**settings.temporal_connect_options(), "target_host": endpoints.temporal_address}
            ),
            TEMPORAL_ANSWER_S,
        )
        for queue, kind in (
            (settings.task_queue, TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW),
            (settings.task_queue, TaskQueueType.TASK_QUEUE_TYPE_ACTIVITY),
            (settings.inference_task_queue, TaskQueueType.TASK_QUEUE_TYPE_ACTIVITY),
        ):
            status.queues.append(await _pollers(client, settings.temporal_namespace, queue, kind))
    except Exception as exc:  # the report says Temporal did not answer, and why
        status.temporal_error = str(exc) or type(exc).__name__
    return status


async def _pollers(client: Client, namespace: str, queue: str, kind: int) -> QueuePollers:
    resp = await client.workflow_service.describe_task_queue(
        DescribeTaskQueueRequest(
            namespace=namespace,
            task_queue=TaskQueue(name=queue),
            task_queue_type=kind,  # type: ignore[arg-type]
        )
    )
    seen_after = datetime.now(UTC) - timedelta(seconds=POLLER_SEEN_S)
    kind_name = "workflow" if kind == TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW else "activity"
    return QueuePollers(
        task_queue=queue,
        kind=kind_name,
        pollers=[
            p.identity
            for p in resp.pollers
            if p.last_access_time.ToDatetime(tzinfo=UTC) >= seen_after
            and not _dead_here(p.identity)
        ],
    )


def _dead_here(identity: str) -> bool:
    """A poller named `pid@host` (the SDK's default identity) of this host whose process
    is gone: the server lists it for a minute after a crash."""
    pid, _, host = identity.partition("@")
    return host == socket.gethostname() and pid.isdigit() and not pid_alive(int(pid))


def format_status(status: StackStatus) -> str:
    if status.endpoints is None:
        return "no agentkeel stack is running from this state directory (start one: agentkeel up)"
    lines = ["agentkeel stack: " + ("healthy" if status.healthy else "NOT healthy")]
    # Child pids are in the table below.
    supervisor = {"supervisor": status.endpoints.pids.get("supervisor", 0)}
    lines.append(describe(dataclasses.replace(status.endpoints, pids=supervisor)))
    if status.children:
        lines.append("")
        lines.append(f"  {'process':<18} {'state':<11} {'pid':>7} {'restarts':>8}  last exit")
        for c in status.children:
            lines.append(
                f"  {c.name:<18} {c.state:<11} {c.pid:>7} {c.restarts:>8}  {c.last_exit or '-'}"
            )
        failed = [c for c in status.children if c.state == ChildState.FAILED]
        for c in failed:
            lines.append(f"  {c.name} kept crashing and was left down; its log: {c.log}")
    lines.append("")
    if status.temporal_error is not None:
        lines.append(f"  Temporal did not answer: {status.temporal_error}")
    for q in status.queues:
        who = ", ".join(q.pollers) if q.pollers else "NO WORKER POLLING"
        lines.append(f"  {q.kind} queue {q.task_queue!r}: {who}")
    return "\n".join(lines)
