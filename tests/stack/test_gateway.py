"""The HTTP/SSE gateway on the real stack, read by a plain HTTP client (httpx)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import asyncpg
import httpx
import pytest

from agentkeel.gateway.app import create_app
from agentkeel.gateway.keys import ApiKey, ApiKeys
from agentkeel.gateway.server import serving
from agentkeel.schemas.actor import Actor
from agentkeel.settings.ports import free_port
from tests.support.agent_stack import AgentStack, StackFactory
from tests.support.fakes import FakeStreamingPolicy
from tests.support.refunds import refundable_order

QUESTION = "What is your return policy for damaged items?"
CUSTOMER_TOKEN, OTHER_CUSTOMER_TOKEN, STAFF_TOKEN = "c" * 32, "o" * 32, "s" * 32
BOUND_S = 60.0


@dataclass
class Event:
    type: str
    data: Any
    id: str | None


@asynccontextmanager
async def gateway(
    stack: AgentStack, keys: ApiKeys | None = None
) -> AsyncIterator[httpx.AsyncClient]:
    """The gateway app served by uvicorn on a free port, and an HTTP client for it."""
    app = create_app(stack.agent_client(), keys or ApiKeys([]))
    async with serving(app, "127.0.0.1", free_port()) as base:
        async with httpx.AsyncClient(base_url=base, timeout=BOUND_S, trust_env=False) as http:
            yield http


async def read_events(
    http: httpx.AsyncClient, workflow_id: str, headers: dict[str, str] | None = None
) -> list[Event]:
    """Every SSE event of the run until the stream ends (parsed by hand: plain HTTP)."""
    events: list[Event] = []
    fields: dict[str, str] = {}
    async with asyncio.timeout(BOUND_S):
        async with http.stream("GET", f"/v1/runs/{workflow_id}/events", headers=headers) as r:
            assert r.status_code == 200, await r.aread()
            assert r.headers["content-type"].startswith("text/event-stream")
            async for line in r.aiter_lines():
                if line == "":
                    if "event" in fields:
                        data = json.loads(fields["data"])
                        events.append(Event(fields["event"], data, fields.get("id")))
                    fields = {}
                elif not line.startswith(":"):
                    name, _, value = line.partition(":")
                    fields[name] = value.removeprefix(" ")
    return events


def tokens(events: list[Event]) -> str:
    return "".join(e.data["text"] for e in events if e.type == "token")


@pytest.fixture
async def streaming_stack(make_stack: StackFactory) -> AgentStack:
    # Answers reach the token stream word by word, from the inference worker.
    return await make_stack(policy=FakeStreamingPolicy(delay_s=0.02))


async def test_a_run_streams_progress_tokens_in_order_then_its_result(
    streaming_stack: AgentStack,
) -> None:
    stack = streaming_stack
    async with gateway(stack) as http:
        body = {"question": QUESTION, "tenant": stack.tenant, "options": {"use_cache": False}}
        started = await http.post("/v1/runs", json=body)
        assert started.status_code == 202, started.text
        run = started.json()
        assert run["state"] == "running" and run["workflow_id"] and run["run_id"]
        events = await read_events(http, run["workflow_id"])

        assert events[0].type == "progress"
        assert events[-1].type == "result"
        assert [e.type for e in events].count("result") == 1
        answer = events[-1].data["answer"]
        assert len([e for e in events if e.type == "token"]) > 3
        assert tokens(events) == answer, "the tokens, in order, are the answer"

        # A subscriber that comes after the run ended still gets the whole answer.
        late = await read_events(http, run["workflow_id"])
        assert tokens(late) == answer and late[-1].type == "result"

        # Resumed after the third token: only what came after it.
        token_events = [e for e in late if e.type == "token"]
        resume = {"Last-Event-ID": token_events[2].id or ""}
        resumed = await read_events(http, run["workflow_id"], headers=resume)
        assert tokens(resumed) == "".join(e.data["text"] for e in token_events[3:])

        view = (await http.get(f"/v1/runs/{run['workflow_id']}")).json()
        assert view["state"] == "completed" and view["result"]["answer"] == answer


async def test_wait_returns_the_result_and_a_repeat_is_answered_from_the_cache(
    stack: AgentStack,
) -> None:
    async with gateway(stack) as http:
        body = {"question": QUESTION, "tenant": stack.tenant}
        first = await http.post("/v1/runs", params={"wait": "true"}, json=body)
        assert first.status_code == 200, first.text
        assert first.json()["state"] == "completed"
        answer = first.json()["result"]["answer"]
        again = await http.post("/v1/runs", params={"wait": "true"}, json=body)
        assert again.status_code == 200
        view = again.json()
        assert (view["state"], view["workflow_id"]) == ("answered", "")
        assert view["result"]["cache"] == "exact" and view["result"]["answer"] == answer


async def test_a_cancelled_run_ends_its_stream_with_an_error(stack: AgentStack) -> None:
    async with gateway(stack) as http:
        body = {
            "question": "Tell me when order 1002 ships",
            "tenant": stack.tenant,
            "options": {"watch_every_s": 1},
        }
        run = (await http.post("/v1/runs", json=body)).json()
        workflow_id = run["workflow_id"]
        stack.started.append(stack.client.get_workflow_handle(workflow_id))
        stream = asyncio.create_task(read_events(http, workflow_id))
        await asyncio.sleep(1.0)
        cancelled = await http.post(f"/v1/runs/{workflow_id}/cancel")
        assert cancelled.status_code == 202, cancelled.text
        events = await stream
        assert events[-1].type == "error"
        assert events[-1].data["state"] == "canceled"
        view = (await http.get(f"/v1/runs/{workflow_id}")).json()
        assert view["state"] == "canceled" and view["error"]
        again = await http.post(f"/v1/runs/{workflow_id}/cancel")
        assert again.status_code == 409 and "ended" in again.json()["detail"]


async def test_bad_bodies_and_unknown_runs_get_clear_errors(stack: AgentStack) -> None:
    async with gateway(stack) as http:
        blank = await http.post("/v1/runs", json={"question": "  "})
        assert blank.status_code == 422
        assert blank.headers["content-type"] == "application/problem+json"
        assert blank.json()["type"] == "/problems/invalid-request"
        assert ["body", "question"] == blank.json()["errors"][0]["loc"]
        unknown_field = await http.post("/v1/runs", json={"question": "hi", "colour": "red"})
        assert unknown_field.status_code == 422
        assert "colour" in unknown_field.json()["errors"][0]["loc"]
        bad_tenant = await http.post("/v1/runs", json={"question": "hi", "tenant": "a b"})
        assert bad_tenant.status_code == 422 and "tenant" in str(bad_tenant.json())
        not_json = await http.post(
            "/v1/runs", content=b"{nope", headers={"content-type": "application/json"}
        )
        assert not_json.status_code == 422
        huge = await http.post(
            "/v1/runs", content=b"x" * 70_000, headers={"content-type": "application/json"}
        )
        assert huge.status_code == 413

        async def chunks() -> AsyncIterator[bytes]:  # no Content-Length: chunked
            for _ in range(100):
                yield b"x" * 1000

        chunked = await http.post(
            "/v1/runs", content=chunks(), headers={"content-type": "application/json"}
        )
        assert chunked.status_code == 413 and "over" in chunked.json()["detail"]
        # A workflow that is not an AgentWorkflow run is no run of the gateway's.
        other = await stack.client.start_workflow(
            "SomethingElse", id=f"other-{stack.tenant}", task_queue="nobody-polls-this"
        )
        stack.started.append(other)
        for path in (f"/v1/runs/{other.id}", f"/v1/runs/{other.id}/events"):
            assert (await http.get(path)).status_code == 404
        for path in ("/v1/runs/no-such-run", "/v1/runs/no-such-run/events"):
            missing = await http.get(path)
            assert missing.status_code == 404 and "no-such-run" in missing.json()["detail"]
            assert missing.json()["type"] == "/problems/run-not-found"
        assert (await http.post("/v1/runs/no-such-run/cancel")).status_code == 404
        schema = (await http.get("/openapi.json")).json()
        assert {"/v1/runs", "/v1/runs/{workflow_id}/events"} <= set(schema["paths"])
        assert {"AgentRequest", "AgentResult", "RunView"} <= set(schema["components"]["schemas"])


async def test_api_keys_bind_tenant_and_actor(stack: AgentStack, database_url: str) -> None:
    pool = await asyncpg.create_pool(database_url, min_size=1, max_size=2)
    try:
        order_id, owner = await refundable_order(pool, at_least_cents=15_000)
    finally:
        await pool.close()
    tenant = stack.tenant
    keys = ApiKeys(
        [
            key(CUSTOMER_TOKEN, tenant, Actor(role="customer", subject=str(owner))),
            key(OTHER_CUSTOMER_TOKEN, tenant, Actor(role="customer", subject=str(owner + 1))),
            key(STAFF_TOKEN, tenant, Actor(role="staff", name="bob")),
        ]
    )
    customer = {"Authorization": f"Bearer {CUSTOMER_TOKEN}"}
    other = {"Authorization": f"Bearer {OTHER_CUSTOMER_TOKEN}"}
    staff = {"Authorization": f"Bearer {STAFF_TOKEN}"}
    refund = f"Please refund $150.00 for order {order_id}, it arrived damaged"
    async with gateway(stack, keys) as http:
        assert (await http.post("/v1/runs", json={"question": "hi"})).status_code == 401
        wrong = await http.post(
            "/v1/runs", json={"question": "hi"}, headers={"Authorization": "Bearer nope"}
        )
        assert wrong.status_code == 401 and wrong.headers["www-authenticate"] == "Bearer"
        # `/mcp` refuses a missing or unknown key in the same problem format as every route.
        for headers in ({}, {"Authorization": "Bearer nope"}):
            mcp = await http.post("/mcp", json={"jsonrpc": "2.0"}, headers=headers)
            assert mcp.status_code == 401 and mcp.headers["www-authenticate"] == "Bearer"
            assert mcp.headers["content-type"] == "application/problem+json"
            assert mcp.json()["status"] == 401 and mcp.json()["type"] == wrong.json()["type"]
        other_tenant = await http.post(
            "/v1/runs", json={"question": "hi", "tenant": "someone-else"}, headers=customer
        )
        assert other_tenant.status_code == 403 and "someone-else" in other_tenant.text
        claimed = await http.post(
            "/v1/runs", json={"question": "hi", "actor": {"role": "staff"}}, headers=customer
        )
        assert claimed.status_code == 403

        started = await http.post("/v1/runs", json={"question": refund}, headers=customer)
        assert started.status_code == 202, started.text
        workflow_id = started.json()["workflow_id"]
        stack.started.append(stack.client.get_workflow_handle(workflow_id))
        for method, path in (
            ("GET", ""),
            ("GET", "/events"),
            ("POST", "/cancel"),
        ):
            refused = await http.request(method, f"/v1/runs/{workflow_id}{path}", headers=other)
            assert refused.status_code == 404, (method, path, refused.text)
        foreign = await http.post(
            f"/v1/runs/{workflow_id}/approve", json={"approved": True}, headers=other
        )
        assert foreign.status_code == 403  # a customer's key approves nothing
        awaiting = None
        for _ in range(150):
            view = (await http.get(f"/v1/runs/{workflow_id}", headers=customer)).json()
            awaiting = (view.get("progress") or {}).get("awaiting")
            if awaiting:
                break
            await asyncio.sleep(0.2)
        assert awaiting is not None, "a customer's large refund waits for staff"
        assert awaiting["actor"] == {"role": "customer", "subject": str(owner), "name": None}

        decision = {"approved": True, "reason": "ok", "approval_id": awaiting["approval_id"]}
        refused = await http.post(
            f"/v1/runs/{workflow_id}/approve", json=decision, headers=customer
        )
        assert refused.status_code == 403 and "staff" in refused.json()["detail"]
        impostor = await http.post(
            f"/v1/runs/{workflow_id}/approve", json=decision | {"approver": "eve"}, headers=staff
        )
        assert impostor.status_code == 403
        approved = await http.post(f"/v1/runs/{workflow_id}/approve", json=decision, headers=staff)
        assert approved.status_code == 200, approved.text
        assert (approved.json()["approver"], approved.json()["approved"]) == ("bob", True)
        result = await stack.client.get_workflow_handle(workflow_id).result()
        assert result["approvals"][0]["approver"] == "bob"


def key(token: str, tenant: str, actor: Actor) -> ApiKey:
    return ApiKey(token=token, tenant=tenant, actor=actor)
