"""Faults on real processes: the local stack with its workers as child processes, a CPU
worker killed with SIGKILL in the middle of refunds, and Postgres restarted under load.

Every run must complete once the part is back, and every refund must happen exactly once.
"""

from __future__ import annotations

import asyncio
import os
import signal

import asyncpg
from temporalio.client import Client, WorkflowHandle

from agentkeel.cli.stack.local import StackEndpoints
from agentkeel.cli.stack.services import restart_embedded_postgres
from agentkeel.cli.stack.status import stack_status
from agentkeel.cli.stack.watchdog import ChildState
from agentkeel.schemas.actor import Actor
from agentkeel.schemas.request import AgentRequest
from agentkeel.schemas.result import AgentResult, StepStatus
from agentkeel.settings.model import Settings
from agentkeel.workers.temporal_client import agentkeel_plugins
from agentkeel.workflows.agent import AgentWorkflow
from tests.support.local_stack import running as running

RUN_TIMEOUT_S = 120

STAFF = Actor(role="staff", name="ops")


async def _start(client: Client, settings: Settings, question: str, key: str) -> WorkflowHandle:
    request = AgentRequest(question=question, tenant="default", actor=STAFF, request_id=key)
    return await client.start_workflow(
        AgentWorkflow.run, request, id=f"faults-{key}", task_queue=settings.task_queue
    )


async def _refunded(db: asyncpg.Connection, orders: list[int], keys: str) -> dict[int, int]:
    """Refunds per order made by this test's requests (their idempotency keys name them)."""
    rows = await db.fetch(
        "SELECT order_id, count(*) AS n FROM refunds WHERE order_id = ANY($1) "
        "AND idempotency_key LIKE '%' || $2 || '%' GROUP BY order_id",
        orders,
        keys,
    )
    return {r["order_id"]: r["n"] for r in rows}


async def _refundable(db_url: str, n: int, offset: int) -> list[int]:
    """`n` orders that can take a small refund (not cancelled), from the seeded data."""
    db = await asyncpg.connect(db_url)
    try:
        rows = await db.fetch(
            "SELECT order_id FROM orders WHERE status <> 'cancelled' AND total_cents >= 500 "
            "ORDER BY order_id OFFSET $1 LIMIT $2",
            offset,
            n,
        )
    finally:
        await db.close()
    return [r["order_id"] for r in rows]


async def _all_done(handles: list[WorkflowHandle]) -> list[AgentResult]:
    results: list[AgentResult] = await asyncio.wait_for(
        asyncio.gather(*(h.result() for h in handles)), RUN_TIMEOUT_S
    )
    return results


async def test_a_killed_cpu_worker_is_restarted_and_every_refund_happens_once(
    running: tuple[Settings, StackEndpoints],
) -> None:
    settings, endpoints = running
    client = await Client.connect(endpoints.temporal_address, plugins=agentkeel_plugins())
    orders = await _refundable(endpoints.database_url, 10, 0)
    db = await asyncpg.connect(endpoints.database_url)
    try:
        handles = [
            await _start(
                client, settings, f"Refund $3.00 for order {o}, faults kill test", f"kill-{o}"
            )
            for o in orders
        ]
        # Kill the worker once refunds have begun: the rest are in flight or queued.
        for _ in range(400):
            if await _refunded(db, orders, "kill-"):
                break
            await asyncio.sleep(0.025)
        killed = endpoints.pids["worker cpu"]
        os.kill(killed, signal.SIGKILL)
        results = await _all_done(handles)
        refunds = await _refunded(db, orders, "kill-")
    finally:
        await db.close()
    for result in results:
        refund = [s for s in result.steps if s.tool == "create_refund"]
        assert [s.status for s in refund] == [StepStatus.SUCCEEDED], result.answer
    assert refunds == {o: 1 for o in orders}, "each refund exactly once"
    status = await stack_status(settings)
    cpu = next(c for c in status.children if c.name == "worker cpu")
    assert cpu.restarts == 1 and cpu.state == ChildState.RUNNING and cpu.pid != killed
    assert cpu.last_exit is not None and cpu.last_exit.startswith("signal SIGKILL")
    assert status.healthy


async def test_runs_complete_across_a_postgres_restart(
    running: tuple[Settings, StackEndpoints],
) -> None:
    settings, endpoints = running
    client = await Client.connect(endpoints.temporal_address, plugins=agentkeel_plugins())
    orders = await _refundable(endpoints.database_url, 8, 10)
    handles = []
    for o in orders:
        handles.append(await _start(client, settings, f"Where is order {o}?", f"look-{o}"))
        handles.append(
            await _start(
                client, settings, f"Refund $2.00 for order {o}, faults restart test", f"pg-{o}"
            )
        )
    await asyncio.to_thread(restart_embedded_postgres, settings.state_dir)
    results = await _all_done(handles)
    for result in results:
        assert all(s.status == StepStatus.SUCCEEDED for s in result.steps), result.answer
    db = await asyncpg.connect(endpoints.database_url)
    try:
        assert await _refunded(db, orders, "pg-") == {o: 1 for o in orders}
    finally:
        await db.close()
