"""The gateway's interactive share, on a real dev server and Redis: a tenant's runs past its
share of runs in flight start in the overflow lane, below every tenant's interactive runs,
and runs that have ended stop counting; a burst of starts wider than the Redis pool is
served.

Runs are started through `POST /v1/runs` on a task queue no worker polls yet, so they stay
in flight; their priority is read back from Temporal (`describe`), as the Web UI shows it.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
from temporalio.client import Client, WorkflowHandle

from agentkeel.activities.quota_leases import quota_prefix, scope_key
from agentkeel.client.agent_client import AgentClient
from agentkeel.gateway.app import create_app
from agentkeel.gateway.keys import ApiKeys
from agentkeel.gateway.server import serving
from agentkeel.schemas.gateway import QuotaKind, QuotaScope
from agentkeel.schemas.lanes import LANE_PRIORITY_KEYS, Lane
from agentkeel.settings.connections import REDIS_MAX_CONNECTIONS, redis_client
from agentkeel.settings.model import Settings
from agentkeel.settings.ports import free_port
from tests.support.agent_stack import new_task_queue

BOUND_S = 60.0


@asynccontextmanager
async def gateway_on(
    client: Client, queue: str, redis_url: str, share: int, **limits: int
) -> AsyncIterator[httpx.AsyncClient]:
    """A keyless gateway starting runs on `queue`, with `share` interactive runs a tenant
    and the quotas `limits` (`gateway_runs_per_key=0`, ...)."""
    settings = Settings(
        task_queue=queue,
        redis_url=redis_url,
        gateway_interactive_runs_per_tenant=share,
        **limits,
    )
    app = create_app(AgentClient.from_settings(client, settings), ApiKeys([]), settings)
    async with (
        serving(app, "127.0.0.1", free_port()) as base,
        httpx.AsyncClient(
            base_url=base,
            timeout=BOUND_S,
            trust_env=False,
            limits=httpx.Limits(max_connections=None),
        ) as http,
    ):
        yield http


async def start(http: httpx.AsyncClient, tenant: str, n: int, **options: Any) -> str:
    body = {
        "question": f"Where is order {1001 + n}?",
        "tenant": tenant,
        "options": {"use_cache": False, **options},
    }
    started = await http.post("/v1/runs", params={"coalesce": "false"}, json=body)
    assert started.status_code == 202, started.text
    workflow_id: str = started.json()["workflow_id"]
    return workflow_id


async def swept(redis_url: str, queue: str, tenant: str, to: int) -> None:
    """Until the tenant's runs in flight, as the quotas count them, are down to `to`."""
    key = scope_key(quota_prefix(queue), QuotaKind.RUNS, QuotaScope.TENANT, tenant)
    redis = redis_client(redis_url)
    try:
        async with asyncio.timeout(BOUND_S):
            for _ in itertools.count():
                if await redis.zcard(key) <= to:
                    return
                await asyncio.sleep(0.1)
    finally:
        await redis.aclose()


async def priority_key(client: Client, workflow_id: str) -> int:
    described = await client.get_workflow_handle(workflow_id).describe()
    return described.raw_description.workflow_execution_info.priority.priority_key


async def test_runs_past_a_tenants_share_start_in_the_overflow_lane_until_runs_end(
    client: Client, redis_url: str
) -> None:
    queue = new_task_queue()  # no worker: every run stays in flight
    flood, other = f"flood-{queue}", f"other-{queue}"
    interactive, overflow = LANE_PRIORITY_KEYS[Lane.INTERACTIVE], LANE_PRIORITY_KEYS[Lane.OVERFLOW]
    handles: list[WorkflowHandle[Any, Any]] = []
    try:
        async with gateway_on(client, queue, redis_url, share=2, gateway_lease_s=3) as http:
            first = [await start(http, flood, n) for n in range(3)]
            handles += [client.get_workflow_handle(w) for w in first]
            keys = [await priority_key(client, w) for w in first]
            assert keys == [interactive, interactive, overflow]
            # Another tenant's share is its own.
            theirs = await start(http, other, 0)
            handles.append(client.get_workflow_handle(theirs))
            assert await priority_key(client, theirs) == interactive
            # A watch is an automation, whatever the tenant holds.
            watch = await start(http, flood, 9, watch_every_s=60)
            handles.append(client.get_workflow_handle(watch))
            assert await priority_key(client, watch) == LANE_PRIORITY_KEYS[Lane.AUTOMATION]

            # Runs that ended stop counting once the gateway's sweep has let them go.
            for workflow_id in first[:2]:
                await client.get_workflow_handle(workflow_id).terminate("test: ended")
            await swept(redis_url, queue, flood, to=2)  # the overflow run and the watch
            later = await start(http, flood, 4)
            handles.append(client.get_workflow_handle(later))
            assert await priority_key(client, later) == interactive
    finally:
        for handle in handles:
            try:
                await handle.terminate("test over")
            except Exception:  # already ended
                pass


async def test_a_burst_of_starts_wider_than_the_redis_pool_is_served(
    client: Client, redis_url: str
) -> None:
    """More starts at once than one process's Redis connections (`REDIS_MAX_CONNECTIONS`):
    each waits for a connection rather than failing with a 500 ("Too many connections").
    On a loaded machine a new connection may still time out: that start is a `503` with
    `Retry-After` (nothing started), never a 500."""
    queue = new_task_queue()
    burst = REDIS_MAX_CONNECTIONS + 50
    lifted = {"gateway_runs_per_key": 0, "gateway_runs_per_tenant": 0}
    body = {"question": "Where is order 1001?", "tenant": f"flood-{queue}"}
    async with gateway_on(client, queue, redis_url, share=10, **lifted) as http:
        answers = await asyncio.gather(
            *(http.post("/v1/runs", params={"coalesce": "false"}, json=body) for _ in range(burst))
        )
    refused = [a for a in answers if a.status_code != 202]
    assert all(a.status_code == 503 and a.headers["retry-after"] for a in refused), refused[:1]
    ids = [a.json()["workflow_id"] for a in answers if a.status_code == 202]
    assert len(ids) >= burst // 2, f"{len(refused)} of {burst} starts refused"
    keys = [await priority_key(client, w) for w in ids]
    assert keys.count(LANE_PRIORITY_KEYS[Lane.INTERACTIVE]) >= 10, keys
    assert keys.count(LANE_PRIORITY_KEYS[Lane.OVERFLOW]) > 0, keys
    for workflow_id in ids:
        await client.get_workflow_handle(workflow_id).terminate("test over")
