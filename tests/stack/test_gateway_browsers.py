"""The gateway against browsers and strangers, on the real stack: what a web page sends is
refused without keys, runs it cannot read are 404, approvals are the key's.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from typing import Any

import asyncpg
import httpx

from agentkeel.gateway.keys import ApiKeys
from agentkeel.schemas.actor import Actor
from agentkeel.schemas.names import AGENT_WORKFLOW
from tests.support.agent_stack import AgentStack
from tests.support.gateway_http import (
    BOUND_S,
    CUSTOMER_TOKEN,
    OTHER_STAFF_TOKEN,
    QUESTION,
    STAFF_TOKEN,
    bearer,
    gateway,
    key,
)
from tests.support.refunds import refundable_order


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
                assert answer.json() == {  # the same answer, whether or not the run exists
                    "type": "/problems/run-not-found",
                    "title": "No such run",
                    "status": 404,
                    "detail": f"no run {workflow_id!r}",
                }


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
    decision = {"approved": True, "reason": "damage confirmed", "approval_id": 1}
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
            approve, json={"approved": False, "approval_id": 1}, headers=bearer(OTHER_STAFF_TOKEN)
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
