"""agentkeel as an MCP server, driven by the official MCP Python SDK's client.

The gateway's `/mcp` (streamable HTTP) with API keys as bearer tokens: the lifecycle
(the SDK's handshake), the tool list with its annotations, a run started and waited for
with progress notifications, a refund that waits for approval, listed and approved over
MCP, a run read again by its id after the client went away, keys that bind, `agentkeel
mcp` over stdio, and the published conformance suite's server scenarios for any server.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import asyncpg
import mcp.types as types
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from agentkeel.gateway.app import create_app
from agentkeel.gateway.keys import ApiKey, ApiKeys
from agentkeel.gateway.server import serving
from agentkeel.schemas.actor import Actor
from agentkeel.settings.ports import free_port
from tests.support.agent_stack import AgentStack
from tests.support.mcp_reference import npm_server
from tests.support.paths import ROOT
from tests.support.refunds import refundable_order

CUSTOMER, STAFF = "c" * 32, "s" * 32


@asynccontextmanager
async def gateway_url(stack: AgentStack, keys: ApiKeys) -> AsyncIterator[str]:
    app = create_app(stack.agent_client(), keys)
    async with serving(app, "127.0.0.1", free_port()) as base:
        yield f"{base}/mcp"


def mcp_client(url: str, token: str | None) -> Client:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    transport = streamable_http_client(url, http_client=create_mcp_http_client(headers))
    return Client(transport, cache=None)


def structured(result: types.CallToolResult) -> dict[str, Any]:
    assert not result.is_error, result.content
    if isinstance(result.structured_content, dict):
        return result.structured_content
    text = result.content[0]
    assert isinstance(text, types.TextContent)
    loaded: dict[str, Any] = json.loads(text.text)
    return loaded


async def test_an_mcp_client_runs_waits_and_approves(stack: AgentStack, database_url: str) -> None:
    order_id, keys = await _an_owner_and_staff(stack, database_url)
    async with gateway_url(stack, keys) as url:
        async with mcp_client(url, CUSTOMER) as customer:
            workflow_id = await _a_customer_runs_then_waits(customer, stack, order_id)

        # The client went away; the run goes on, and another client reads it by its id.
        async with mcp_client(url, STAFF) as staff:
            await _staff_approve_and_read_the_run(staff, workflow_id)


async def _an_owner_and_staff(stack: AgentStack, database_url: str) -> tuple[int, ApiKeys]:
    """An order refundable by $150, and keys for its owner (`CUSTOMER`) and staff (`STAFF`)."""
    pool = await asyncpg.create_pool(database_url, min_size=1, max_size=2)
    try:
        order_id, owner = await refundable_order(pool, at_least_cents=15_000)
    finally:
        await pool.close()
    keys = ApiKeys(
        [
            ApiKey(
                token=CUSTOMER,
                tenant=stack.tenant,
                actor=Actor(role="customer", subject=str(owner)),
            ),
            ApiKey(token=STAFF, tenant=stack.tenant, actor=Actor(role="staff", name="bob")),
        ]
    )
    return order_id, keys


async def _a_customer_runs_then_waits(customer: Client, stack: AgentStack, order_id: int) -> str:
    """The customer's key: the tool list, a run waited for with progress, and a large refund
    left waiting for approval (which that key cannot give). The waiting run's workflow id."""
    assert customer.server_info is not None and customer.server_info.name == "agentkeel"
    listed = {t.name: t for t in (await customer.list_tools()).tools}
    assert set(listed) == {
        "start_run",
        "get_run",
        "list_awaiting_approval",
        "decide_approval",
        "cancel_run",
    }
    assert listed["get_run"].annotations is not None
    assert listed["get_run"].annotations.read_only_hint is True
    assert listed["decide_approval"].annotations.destructive_hint is True  # type: ignore[union-attr]

    heard_so_far: list[tuple[float, float | None, str | None]] = []

    async def heard(progress: float, total: float | None, message: str | None) -> None:
        heard_so_far.append((progress, total, message))

    question = f"Where is order {order_id}?"
    answered = structured(
        await customer.call_tool(
            "start_run", {"question": question, "wait_s": 30}, progress_callback=heard
        )
    )
    assert answered["state"] == "completed" and answered["workflow_id"]
    assert str(order_id) in answered["result"]["answer"]
    assert heard_so_far, "progress notifications while the run ran"

    refund = f"Please refund $150.00 for order {order_id}, it arrived damaged"
    waiting = structured(await customer.call_tool("start_run", {"question": refund, "wait_s": 3}))
    assert waiting["state"] == "running"
    workflow_id = waiting["workflow_id"]
    stack.started.append(stack.client.get_workflow_handle(workflow_id))
    refused = await customer.call_tool(
        "decide_approval", {"workflow_id": workflow_id, "approved": True, "approval_id": 1}
    )
    assert refused.is_error, "a customer's key approves nothing"
    return workflow_id


async def _staff_approve_and_read_the_run(staff: Client, workflow_id: str) -> None:
    """Staff's key: the waiting run listed, approved as bob, and read until it completes."""
    for _ in range(50):
        listed_runs = structured(await staff.call_tool("list_awaiting_approval", {}))
        if any(r["workflow_id"] == workflow_id for r in listed_runs["runs"]):
            break
        await asyncio.sleep(0.2)
    else:
        raise AssertionError(f"{workflow_id} was never listed as awaiting approval")
    awaiting = next(r for r in listed_runs["runs"] if r["workflow_id"] == workflow_id)
    decided = structured(
        await staff.call_tool(
            "decide_approval",
            {
                "workflow_id": workflow_id,
                "approved": True,
                "approval_id": awaiting["awaiting"]["approval_id"],
            },
        )
    )
    assert decided["approver"] == "bob" and decided["approved"] is True
    for _ in range(100):
        run = structured(await staff.call_tool("get_run", {"workflow_id": workflow_id}))
        if run["state"] != "running":
            break
        await asyncio.sleep(0.2)
    assert run["state"] == "completed", run
    assert run["result"]["approvals"][0]["approver"] == "bob"


async def test_keys_bind_every_call(stack: AgentStack) -> None:
    keys = ApiKeys(
        [ApiKey(token=CUSTOMER, tenant=stack.tenant, actor=Actor(role="customer", subject="1"))]
    )
    async with gateway_url(stack, keys) as url:
        for token in (None, "nope" * 8):
            served = False
            try:
                async with mcp_client(url, token) as nobody:
                    await nobody.list_tools()
                    served = True
            except Exception:
                pass
            assert not served, "a call without a valid key was served"
        async with mcp_client(url, CUSTOMER) as customer:
            claimed = await customer.call_tool(
                "start_run", {"question": "hi", "actor": {"role": "staff"}, "wait_s": 1}
            )
            assert claimed.is_error and "403" in str(claimed.content)
            hidden = await customer.call_tool("get_run", {"workflow_id": "no-such-run"})
            assert hidden.is_error and "404" in str(hidden.content)


async def test_agentkeel_mcp_serves_the_same_tools_over_stdio(
    stack: AgentStack, tmp_path: Path
) -> None:
    done = await stack.ask("What is your return policy for damaged items?")
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("AGENTKEEL_")},
        "PYTHONPATH": str(ROOT),
        "AGENTKEEL_TEMPORAL_ADDRESS": stack.client.service_client.config.target_host,
        "AGENTKEEL_TASK_QUEUE": stack.task_queue,
        "AGENTKEEL_STATE_DIR": str(tmp_path),
        "AGENTKEEL_LOG_FORMAT": "json",
    }
    command = StdioServerParameters(
        command=sys.executable, args=["-m", "agentkeel.cli.main", "mcp"], env=env
    )
    handle = stack.started[-1]
    async with Client(command, cache=None) as local:
        names = {t.name for t in (await local.list_tools()).tools}
        assert "start_run" in names and "get_run" in names
        run = structured(await local.call_tool("get_run", {"workflow_id": handle.id}))
    assert run["state"] == "completed"
    assert run["result"]["answer"] == done.answer


async def test_agentkeel_mcp_over_stdio_counts_runs_toward_the_same_quotas(
    stack: AgentStack, tmp_path: Path
) -> None:
    """`agentkeel mcp` is no side door: with a runs quota of 1, a watch it started still
    running, its second start is refused (429) as the HTTP gateway's would be."""
    keys_file = tmp_path / "keys.json"
    staff = {"role": "staff", "name": "ann"}
    keys_file.write_text(
        json.dumps({"keys": [{"token": "m" * 32, "tenant": stack.tenant, "actor": staff}]})
    )
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("AGENTKEEL_")},
        "PYTHONPATH": str(ROOT),
        "AGENTKEEL_TEMPORAL_ADDRESS": stack.client.service_client.config.target_host,
        "AGENTKEEL_TASK_QUEUE": stack.task_queue,
        "AGENTKEEL_REDIS_URL": str(stack.settings.redis_url),
        "AGENTKEEL_GATEWAY_RUNS_PER_KEY": "1",
        "AGENTKEEL_API_KEYS_FILE": str(keys_file),
        "AGENTKEEL_MCP_API_KEY": "m" * 32,
        "AGENTKEEL_STATE_DIR": str(tmp_path),
        "AGENTKEEL_LOG_FORMAT": "json",
    }
    command = StdioServerParameters(
        command=sys.executable, args=["-m", "agentkeel.cli.main", "mcp"], env=env
    )
    watch = {"question": "Tell me when order 1002 ships", "wait_s": 0.5}
    async with Client(command, cache=None) as local:
        first = await local.call_tool("start_run", {**watch, "request_id": "one"})
        assert not first.is_error, first.content
        second = await local.call_tool("start_run", {**watch, "request_id": "two"})
    said = " ".join(c.text for c in second.content if isinstance(c, types.TextContent))
    assert second.is_error and "429" in said and "1 runs in flight" in said, said


async def test_the_endpoint_passes_the_mcp_conformance_scenarios(
    stack: AgentStack, tmp_path: Path
) -> None:
    """The published conformance suite's server scenarios that any server must pass
    (the others call tools of its own test server)."""
    conformance = npm_server("conformance")
    async with gateway_url(stack, ApiKeys([])) as url:
        for scenario in ("server-initialize", "tools-list"):
            checked = await asyncio.create_subprocess_exec(
                *conformance,
                "server",
                "--url",
                url,
                "--scenario",
                scenario,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.STDOUT,
                cwd=tmp_path,  # it writes its `results/` where it runs
            )
            out, _ = await asyncio.wait_for(checked.communicate(), timeout=120)
            assert checked.returncode == 0, out.decode()[-2000:]
            assert re.search(r"Passed: (\d+)/\1, 0 failed", out.decode()), out.decode()[-2000:]
