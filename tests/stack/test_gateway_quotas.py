"""The gateway against hogs, on the real stack: quotas per key and tenant hold across replicas
(Redis) and free when runs end, and one progress poller serves every stream of a run.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from typing import Any

import httpx
import pytest
from temporalio.client import WorkflowFailureError

from agentkeel.schemas.gateway import QuotaProblem
from tests.support.agent_stack import AgentStack
from tests.support.gateway_http import BOUND_S, QUESTION, gateway

WATCH = "Tell me when order 1002 ships"


def watch_body(stack: AgentStack) -> dict[str, Any]:
    return {
        "question": WATCH,
        "tenant": stack.tenant,
        "options": {"watch_every_s": 1, "use_cache": False},
        "request_id": uuid.uuid4().hex,  # one run each: equal requests would share one
    }


async def over_quota(answer: httpx.Response) -> QuotaProblem:
    assert answer.status_code == 429, answer.text
    problem = QuotaProblem.model_validate(answer.json())
    assert int(answer.headers["retry-after"]) == problem.retry_after_s >= 1
    return problem


async def test_quotas_of_runs_and_watches_hold_across_replicas_and_free_when_runs_end(
    stack: AgentStack,
) -> None:
    async def start(http: httpx.AsyncClient) -> httpx.Response:
        started = await http.post("/v1/runs", json=watch_body(stack))
        if started.status_code == 202:
            stack.started.append(stack.client.get_workflow_handle(started.json()["workflow_id"]))
        return started

    async with gateway(stack, gateway_runs_per_tenant=2, gateway_watches_per_key=0) as http:
        first, second = await start(http), await start(http)
        assert (first.status_code, second.status_code) == (202, 202), second.text
        problem = await over_quota(await start(http))
        assert (problem.quota, problem.scope, problem.limit) == ("runs", "tenant", 2)
        assert "2 runs in flight" in problem.detail

        # A run that ends frees its slot: the next start finds it gone.
        workflow_id = first.json()["workflow_id"]
        assert (await http.post(f"/v1/runs/{workflow_id}/cancel")).status_code == 202
        handle = stack.client.get_workflow_handle(workflow_id)
        async with asyncio.timeout(BOUND_S):
            with contextlib.suppress(WorkflowFailureError):  # canceled
                await handle.result()
        assert (await start(http)).status_code == 202

        # A wait longer than the gateway allows is refused, naming the most.
        body = {"question": QUESTION, "tenant": stack.tenant}
        too_long = await http.post(
            "/v1/runs", params={"wait": "true", "timeout_s": "900"}, json=body
        )
        assert too_long.status_code == 400 and "300" in too_long.json()["detail"]

    # Another replica (or this one restarted) counts the runs the first started.
    async with gateway(stack, gateway_runs_per_tenant=0, gateway_watches_per_key=1) as http:
        problem = await over_quota(await start(http))
        assert (problem.quota, problem.scope, problem.limit) == ("watches", "key", 1)


async def test_streams_have_a_quota_and_share_one_progress_poller(
    stack: AgentStack, monkeypatch: pytest.MonkeyPatch
) -> None:
    client = stack.agent_client()
    queries = 0
    query = client.progress

    async def counted(workflow_id: str) -> Any:
        nonlocal queries
        queries += 1
        return await query(workflow_id)

    monkeypatch.setattr(client, "progress", counted)
    async with gateway(stack, client=client, gateway_streams_per_key=3) as http:
        started = await http.post("/v1/runs", json=watch_body(stack))
        workflow_id = started.json()["workflow_id"]
        stack.started.append(stack.client.get_workflow_handle(workflow_id))
        path = f"/v1/runs/{workflow_id}/events"
        opened = asyncio.Event()
        done = asyncio.Event()

        async def follow() -> list[str]:
            lines = []
            async with http.stream("GET", path) as r:
                assert r.status_code == 200
                async for line in r.aiter_lines():
                    lines.append(line)
                    if line.startswith("event: progress"):
                        opened.set()
                    if done.is_set():
                        break
            return lines

        followers = [asyncio.create_task(follow()) for _ in range(3)]
        async with asyncio.timeout(BOUND_S):
            await opened.wait()
            await asyncio.sleep(0.3)  # every stream open and polling
        problem = await over_quota(await http.get(path))
        assert (problem.quota, problem.scope, problem.limit) == ("streams", "key", 3)
        # Waiting on a run is following it: no wait=true past the streams quota either.
        body = {"question": QUESTION, "tenant": stack.tenant, "options": {"use_cache": False}}
        waiting = await http.post("/v1/runs", params={"wait": "true"}, json=body)
        assert (await over_quota(waiting)).quota == "streams"
        before, began = queries, time.monotonic()
        await asyncio.sleep(2.0)
        polled = queries - before
        per_stream = (time.monotonic() - began) / 0.25
        assert polled <= per_stream + 2, f"{polled} queries for 3 streams: one poller each"
        done.set()
        for follower in followers:
            assert any(line.startswith("event: progress") for line in await follower)
        # The streams closed: their slots are free and the poller stops.
        async with asyncio.timeout(BOUND_S):
            while True:
                async with http.stream("GET", path) as r:
                    if r.status_code == 200:
                        break
                await asyncio.sleep(0.2)
        settled = queries
        await asyncio.sleep(1.0)
        assert queries - settled <= 1, "no stream follows the run: nobody polls it"
