"""The gateway against browsers and hogs, on the real stack: what a web page sends is refused
without keys, quotas per key and tenant hold across replicas (Redis), one progress poller
serves every stream of a run, runs it cannot read are 404, approvals are the key's."""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import asyncpg
import httpx
import pytest
from temporalio.client import WorkflowFailureError

from agentkeel.client.agent_client import AgentClient
from agentkeel.gateway.app import create_app
from agentkeel.gateway.keys import ApiKey, ApiKeys
from agentkeel.gateway.server import serving
from agentkeel.schemas.actor import Actor
from agentkeel.schemas.gateway import QuotaProblem
from agentkeel.schemas.names import AGENT_WORKFLOW
from agentkeel.settings.ports import free_port
from tests.support.agent_stack import AgentStack
from tests.support.refunds import refundable_order

QUESTION = "What is your return policy for damaged items?"
WATCH = "Tell me when order 1002 ships"
STAFF_TOKEN, OTHER_STAFF_TOKEN, CUSTOMER_TOKEN = "s" * 32, "t" * 32, "c" * 32
BOUND_S = 60.0


@asynccontextmanager
async def gateway(
    stack: AgentStack,
    keys: ApiKeys | None = None,
    client: AgentClient | None = None,
    **settings: Any,
) -> AsyncIterator[httpx.AsyncClient]:
    """A gateway of the stack's deployment with `AGENTKEEL_GATEWAY_*` `settings`, served by
    uvicorn on a free port, and an HTTP client for it."""
    configured = stack.settings.model_copy(update=settings)
    app = create_app(client or stack.agent_client(), keys or ApiKeys([]), configured)
    async with serving(app, "127.0.0.1", free_port()) as base:
        async with httpx.AsyncClient(base_url=base, timeout=BOUND_S, trust_env=False) as http:
            yield http


def key(token: str, tenant: str, actor: Actor) -> ApiKey:
    return ApiKey(token=token, tenant=tenant, actor=actor)


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


async def test_without_keys_what_a_web_page_sends_is_refused(stack: AgentStack) -> None:
    body = {"question": QUESTION, "tenant": stack.tenant}
    async with gateway(stack, gateway_allowed_hosts="agent.internal, ops.internal") as http:
        # DNS rebinding: the page's own name, resolved to 127.0.0.1.
        rebound = await http.get("/v1/runs/r1", headers={"Host": "evil.example:8080"})
        assert rebound.status_code == 421, rebound.text
        assert "evil.example" in rebound.json()["detail"]
        for allowed in ("localhost:8080", "agent.internal", "[::1]:9"):
            answered = await http.get("/v1/runs/no-such-run", headers={"Host": allowed})
            assert answered.status_code == 404, (allowed, answered.text)
        # A cross-site request, as a browser marks it.
        for headers in (
            {"Origin": "https://evil.example"},
            {"Origin": "null"},
            {"Sec-Fetch-Site": "cross-site"},
            {"Sec-Fetch-Site": "same-site"},
        ):
            refused = await http.post("/v1/runs", json=body, headers=headers)
            assert refused.status_code == 403, (headers, refused.text)
            assert "web page" in refused.text or "origin" in refused.text
        own_page = {"Origin": str(http.base_url).rstrip("/"), "Sec-Fetch-Site": "same-origin"}
        assert (await http.get("/v1/runs/no-such-run", headers=own_page)).status_code == 404
        # A form or `text/plain` POST needs no preflight: it must not start a run.
        for content_type in ("text/plain", "application/x-www-form-urlencoded", None):
            headers = {"content-type": content_type} if content_type else {}
            sent = await http.post("/v1/runs", content=json.dumps(body), headers=headers)
            assert sent.status_code == 415, (content_type, sent.text)
            assert "application/json" in sent.json()["detail"]
        typed = {"content-type": "application/json; charset=utf-8"}
        started = await http.post("/v1/runs", content=json.dumps(body), headers=typed)
        assert started.status_code == 202, started.text
        # A POST without a body (cancel) needs no content type.
        cancelled = await http.post(f"/v1/runs/{started.json()['workflow_id']}/cancel")
        assert cancelled.status_code in (202, 409), cancelled.text

    keys = ApiKeys([key(STAFF_TOKEN, stack.tenant, Actor(role="staff", name="bob"))])
    async with gateway(stack, keys) as http:
        # A key is a secret no page holds: its browser app may call from any origin and
        # host, but its bodies are JSON too.
        sent = await http.post("/v1/runs", content=json.dumps(body), headers=bearer(STAFF_TOKEN))
        assert sent.status_code == 415
        foreign = bearer(STAFF_TOKEN) | {"Origin": "https://app.example", "Host": "api.example"}
        assert (await http.get("/v1/runs/no-such-run", headers=foreign)).status_code == 404


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


async def test_a_run_the_gateway_cannot_read_is_not_found_for_a_key(stack: AgentStack) -> None:
    keys = ApiKeys([key(STAFF_TOKEN, stack.tenant, Actor(role="staff", name="bob"))])
    unread = []
    for workflow_type, arg in (
        (AGENT_WORKFLOW, "not a request"),
        (AGENT_WORKFLOW, {"question": "hi", "actor": {"role": 5}}),
        ("SomethingElse", {"question": "hi", "tenant": stack.tenant}),
    ):
        handle = await stack.client.start_workflow(
            workflow_type,
            arg,
            id=f"unread-{uuid.uuid4().hex[:8]}",
            task_queue=f"nobody-polls-{uuid.uuid4().hex[:8]}",
        )
        stack.started.append(handle)
        unread.append(handle.id)
    async with gateway(stack, keys) as http:
        for workflow_id in [*unread, "no-such-run"]:
            for method, path in (("GET", ""), ("GET", "/events"), ("POST", "/cancel")):
                answer = await http.request(
                    method, f"/v1/runs/{workflow_id}{path}", headers=bearer(STAFF_TOKEN)
                )
                assert answer.status_code == 404, (workflow_id, path, answer.text)
                assert answer.json() == {"detail": f"no run {workflow_id!r}"}


async def awaiting(http: httpx.AsyncClient, workflow_id: str, token: str) -> dict[str, Any]:
    async with asyncio.timeout(BOUND_S):
        while True:
            view = (await http.get(f"/v1/runs/{workflow_id}", headers=bearer(token))).json()
            pending = (view.get("progress") or {}).get("awaiting")
            if pending:
                return dict(pending)
            await asyncio.sleep(0.2)


async def test_approvals_are_made_as_the_key_and_never_by_the_requester(
    stack: AgentStack, database_url: str
) -> None:
    pool = await asyncpg.create_pool(database_url, min_size=1, max_size=2)
    try:
        order_id, owner = await refundable_order(pool, at_least_cents=15_000)
    finally:
        await pool.close()
    bob = Actor(role="staff", name="bob")
    keys = ApiKeys(
        [
            key(STAFF_TOKEN, stack.tenant, bob),
            key(OTHER_STAFF_TOKEN, stack.tenant, Actor(role="staff", name="carol")),
            key(CUSTOMER_TOKEN, stack.tenant, Actor(role="customer", subject=str(owner))),
        ]
    )
    refund = {"question": f"Please refund $150.00 for order {order_id}, it arrived damaged"}
    decision = {"approved": True, "reason": "damage confirmed"}
    async with gateway(stack, keys) as http:
        # Staff asking for a large refund: bob may not approve his own request.
        asked = await http.post("/v1/runs", json=refund, headers=bearer(STAFF_TOKEN))
        assert asked.status_code == 202, asked.text
        own = asked.json()["workflow_id"]
        stack.started.append(stack.client.get_workflow_handle(own))
        await awaiting(http, own, STAFF_TOKEN)
        approve = f"/v1/runs/{own}/approve"
        self_approved = await http.post(approve, json=decision, headers=bearer(STAFF_TOKEN))
        assert self_approved.status_code == 409, self_approved.text
        assert "asked for this" in self_approved.json()["detail"]
        # A body cannot name who decides: `by` is the key's.
        claimed = decision | {"by": {"role": "system"}}
        by_body = await http.post(approve, json=claimed, headers=bearer(STAFF_TOKEN))
        assert by_body.status_code == 422, by_body.text
        rejected = await http.post(
            approve, json={"approved": False}, headers=bearer(OTHER_STAFF_TOKEN)
        )
        assert rejected.status_code == 200, rejected.text

        # A customer's large refund: the customer's key cannot approve, bob's approves as bob.
        asked = await http.post("/v1/runs", json=refund, headers=bearer(CUSTOMER_TOKEN))
        theirs = asked.json()["workflow_id"]
        stack.started.append(stack.client.get_workflow_handle(theirs))
        await awaiting(http, theirs, CUSTOMER_TOKEN)
        approve = f"/v1/runs/{theirs}/approve"
        refused = await http.post(approve, json=decision, headers=bearer(CUSTOMER_TOKEN))
        assert refused.status_code == 403 and "staff" in refused.json()["detail"]
        approved = await http.post(approve, json=decision, headers=bearer(STAFF_TOKEN))
        assert approved.status_code == 200, approved.text
        result = await stack.client.get_workflow_handle(theirs).result()
        [record] = result["approvals"]
        assert record["approver"] == "bob"
        assert record["approved_by"] == bob.model_dump(mode="json")
