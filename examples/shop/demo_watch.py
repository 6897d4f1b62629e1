"""The demo's watch: "tell me when order N ships", then the warehouse ships it.

A run of the demo asks to be told when a processing order ships, shows the run waiting
(as `agentkeel watches` and the Web UI do), then plays the warehouse: it ships the order
in Postgres, and the watch sees it on its next look and answers.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import asyncpg
from temporalio.client import WorkflowFailureError

from agentkeel.client.agent_client import AgentClient
from agentkeel.client.report import format_result
from agentkeel.schemas.progress import RunProgress
from agentkeel.schemas.request import AgentRequest, RunOptions

WATCH_EVERY_S = 1.0
"""The demo looks every second (a real watch's default is minutes)."""


async def demo_watch(client: AgentClient, database_url: str, tenant: str) -> int:
    """Run the watch; the number of failures (0 or 1) for the demo's exit status."""
    order_id = await _processing_order(database_url, tenant)
    if order_id is None:
        print("(no order is still processing: the watch example is skipped)\n")
        return 0
    question = f"Tell me when order {order_id} ships"
    print(f"> {question}\n  (a watch: the run waits, looking again every {WATCH_EVERY_S:g} s)")
    request = AgentRequest(
        question=question, tenant=tenant, options=RunOptions(watch_every_s=WATCH_EVERY_S)
    )
    handle = await client.start(request, coalesce=False)
    progress = await _until_waiting(client, handle.id)
    if progress is not None:
        for waiting in progress.waiting:
            print(f"  waiting: {waiting.step_id} {waiting.what}")
    print(f"  ... the warehouse ships order {order_id} (the demo writes it to Postgres)")
    conn = await asyncpg.connect(database_url)
    try:
        await ship_order(conn, order_id)
    finally:
        await conn.close()
    try:
        result = await client.resolve_outputs(await asyncio.wait_for(handle.result(), timeout=60))
    except (WorkflowFailureError, TimeoutError) as exc:
        print(f"  the watch did not answer: {exc}\n")
        return 1
    print(format_result(result))
    print(f"  workflow {result.workflow_id}\n")
    return 0


async def _until_waiting(client: AgentClient, workflow_id: str) -> RunProgress | None:
    for _ in range(100):
        progress = await client.progress(workflow_id)
        if progress.waiting:
            return progress
        await asyncio.sleep(0.1)
    return None


async def _processing_order(database_url: str, tenant: str) -> int | None:
    conn = await asyncpg.connect(database_url)
    try:
        order_id = await conn.fetchval(
            "SELECT order_id FROM orders o WHERE status = 'processing' AND tenant = $1 "
            "AND NOT EXISTS (SELECT 1 FROM shipments s WHERE s.order_id = o.order_id) "
            "ORDER BY order_id LIMIT 1",
            tenant,
        )
    finally:
        await conn.close()
    return int(order_id) if order_id is not None else None


async def ship_order(db: asyncpg.Pool | asyncpg.Connection, order_id: int) -> None:
    """What the warehouse system does when a parcel leaves: the order is shipped, with a
    tracking number (written behind the tools' backs, as another system would), in the
    order's own tenant."""
    async with _connection(db) as conn, conn.transaction():
        await conn.execute("UPDATE orders SET status = 'shipped' WHERE order_id = $1", order_id)
        await conn.execute(
            "INSERT INTO shipments (order_id, tracking_number, carrier, shipped_at, tenant) "
            "SELECT order_id, $2, 'UPS', now(), tenant FROM orders WHERE order_id = $1",
            order_id,
            f"TRK{order_id:010d}",
        )


@asynccontextmanager
async def _connection(db: asyncpg.Pool | asyncpg.Connection) -> AsyncIterator[asyncpg.Connection]:
    if isinstance(db, asyncpg.Pool):
        async with db.acquire() as conn:
            yield conn
    else:
        yield db
