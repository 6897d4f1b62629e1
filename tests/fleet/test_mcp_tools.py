"""MCP servers' tools as durable steps, through the unchanged worker binary end to end.

Against the reference servers (nobody on this project wrote them): `mcp-server-time` and
`server-memory` over stdio, `server-everything` over streamable HTTP; and against the
suite's own toolbox (`tests/support/mcp_toolbox.py`) for what they cannot show: a slow call
cancelled, an `isError` result, a server that crashes, a tool list that changes.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from temporalio.client import Client, WorkflowFailureError

from agentkeel.client.served_version import CHECK_EVERY_S
from agentkeel.schemas.names import APPROVE_UPDATE, PROGRESS_QUERY
from tests.support.history import awaiting_approval
from tests.support.mcp_stack import VIEWER, Everything, McpStack, mcp_stack


@pytest.fixture(scope="module")
async def shared(
    client: Client,
    admin_dsn: str,
    template_database: str,
    redis_url: str,
    tmp_path_factory: pytest.TempPathFactory,
) -> AsyncIterator[tuple[McpStack, Everything]]:
    """One worker for the tests that neither kill nor restart it."""
    state = tmp_path_factory.mktemp("mcp-shared")
    async with mcp_stack(client, admin_dsn, template_database, redis_url, state) as both:
        yield both


@pytest.fixture
def mcp(shared: tuple[McpStack, Everything]) -> McpStack:
    return shared[0]


@pytest.fixture
async def own(
    client: Client, admin_dsn: str, template_database: str, redis_url: str, tmp_path: Path
) -> AsyncIterator[McpStack]:
    """A worker of this test's own, to kill or to restart."""
    async with mcp_stack(client, admin_dsn, template_database, redis_url, tmp_path) as both:
        yield both[0]


def _steps(result: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {s["id"]: s for s in result["steps"]}


async def _reported(handle: Any) -> str:
    for _ in range(100):
        progress = await handle.query(PROGRESS_QUERY, result_type=dict)
        said = [s["reported"] for s in progress["steps"] if s.get("reported")]
        if said:
            return str(said[0])
        await asyncio.sleep(0.1)
    raise AssertionError("the step never showed the tool's progress")


def _names(state: Path) -> set[str]:
    return {e["name"] for e in _memory(state) if e.get("type") == "entity"}


def _memory(state: Path) -> list[dict[str, Any]]:
    path = state / "memory.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


async def test_two_servers_in_parallel_then_a_dependent_step(mcp: McpStack) -> None:
    plan = {
        "steps": [
            {"id": "s1", "tool": "time_get_current_time", "args": {"timezone": "Etc/UTC"}},
            {"id": "s2", "tool": "everything_get_sum", "args": {"a": 2, "b": 3}},
            {
                "id": "s3",
                "tool": "memory_create_entities",
                "args": {
                    "entities": [
                        {
                            "name": "checked",
                            "entityType": "note",
                            "observations": ["$s1.datetime", "$s2.text"],
                        }
                    ]
                },
            },
        ]
    }
    result = await mcp.run(plan)
    steps = _steps(result)
    assert {i: s["status"] for i, s in steps.items()} == dict.fromkeys(steps, "succeeded")
    # s1 and s2 depend on nothing and ran side by side; s3 started after both had ended.
    assert steps["s1"]["started_at"] < steps["s2"]["finished_at"]
    assert steps["s2"]["started_at"] < steps["s1"]["finished_at"]
    assert steps["s3"]["started_at"] >= max(steps["s1"]["finished_at"], steps["s2"]["finished_at"])
    now = steps["s1"]["output"]["datetime"]
    assert steps["s1"]["output"]["timezone"] == "Etc/UTC"
    assert "5" in steps["s2"]["output"]["text"]
    entity = next(e for e in _memory(mcp.state) if e.get("name") == "checked")
    assert entity["observations"] == [now, steps["s2"]["output"]["text"]]


async def test_bad_arguments_are_refused_by_the_servers_schema_before_anything_runs(
    mcp: McpStack,
) -> None:
    bad = {"steps": [{"id": "s1", "tool": "memory_create_entities", "args": {"entities": [{}]}}]}
    with pytest.raises(WorkflowFailureError) as caught:
        await mcp.run(bad)
    assert "InvalidArguments" in str(caught.value.cause)
    assert "required" in str(caught.value.cause)
    unknown = {"steps": [{"id": "s1", "tool": "everything_get_env", "args": {}}]}
    with pytest.raises(WorkflowFailureError) as left_out:
        await mcp.run(unknown)  # not in the server's `include`: no catalog entry
    assert "UnknownTool" in str(left_out.value.cause)


async def test_a_destructive_tool_waits_for_approval(mcp: McpStack) -> None:
    made = {
        "steps": [
            {
                "id": "s1",
                "tool": "memory_create_entities",
                "args": {"entities": [{"name": "old", "entityType": "note", "observations": []}]},
            }
        ]
    }
    await mcp.run(made)
    handle = await mcp.start(
        {
            "steps": [
                {"id": "s1", "tool": "memory_delete_entities", "args": {"entityNames": ["old"]}}
            ]
        }
    )
    awaiting = await awaiting_approval(handle)
    assert awaiting["tool"] == "memory_delete_entities"
    assert "old" in _names(mcp.state), "nothing deleted before approval"
    decision = {"approved": True, "approver": "bea", "approval_id": awaiting["approval_id"]}
    await handle.execute_update(APPROVE_UPDATE, decision)
    result = await asyncio.wait_for(handle.result(), timeout=60)
    assert _steps(result)["s1"]["status"] == "succeeded"
    assert "old" not in _names(mcp.state)


async def test_a_worker_killed_mid_call_leaves_one_effect(own: McpStack) -> None:
    mcp = own
    plan = {"steps": [{"id": "s1", "tool": "tb_append", "args": {"text": "once", "delay_s": 3}}]}
    handle = await mcp.start(plan, request_id="kill-once")
    started = await mcp.until_event("append_started")
    mcp.kill(mcp.workers[0])
    await mcp.start_worker()
    result = await asyncio.wait_for(handle.result(), timeout=90)
    assert _steps(result)["s1"]["status"] == "succeeded"
    ledger = (mcp.state / "toolbox" / "ledger.jsonl").read_text().splitlines()
    assert [json.loads(line)["key"] for line in ledger] == [started["key"]], "made once"
    keys = {e["key"] for e in mcp.events() if e["event"] == "append_started"}
    assert keys == {started["key"]}, "every attempt carried the same idempotency key"


async def test_authority_and_meta_reach_the_server(mcp: McpStack) -> None:
    result = await mcp.run({"steps": [{"id": "s1", "tool": "tb_whoami", "args": {}}]})
    meta = _steps(result)["s1"]["output"]["meta"]
    assert meta["io.agentkeel/actor"] == {"role": "operator", "name": "ann"}
    assert meta["io.agentkeel/tenant"] == "default"
    refused = await mcp.run({"steps": [{"id": "s1", "tool": "tb_whoami", "args": {}}]}, VIEWER)
    error = _steps(refused)["s1"]["error"]
    assert error["type"] == "NotAuthorized" and "tb_whoami" in error["message"]
    # The time server allows every role.
    allowed = await mcp.run(
        {"steps": [{"id": "s1", "tool": "time_get_current_time", "args": {"timezone": "UTC"}}]},
        VIEWER,
    )
    assert _steps(allowed)["s1"]["status"] == "succeeded"


async def test_is_error_crash_and_cancel_on_the_toolbox(mcp: McpStack) -> None:
    failed = await mcp.run({"steps": [{"id": "s1", "tool": "tb_fail", "args": {"reason": "no"}}]})
    error = _steps(failed)["s1"]["error"]
    assert error["type"] == "McpToolError" and "no" in error["message"]
    assert len([e for e in mcp.events() if e["event"] == "server_started"]) == 1

    crashed = await mcp.run({"steps": [{"id": "s1", "tool": "tb_crash_once", "args": {}}]})
    assert _steps(crashed)["s1"]["status"] == "succeeded"
    pids = [e["pid"] for e in mcp.events() if e["event"] in ("crashing", "answered_after_crash")]
    assert len(pids) == 2 and pids[0] != pids[1], "a fresh server process answered the retry"

    handle = await mcp.start({"steps": [{"id": "s1", "tool": "tb_slow", "args": {"seconds": 30}}]})
    await mcp.until_event("slow_started")
    reported = await _reported(handle)  # the server's progress notifications reach the run
    assert reported.endswith(tuple(f": step {n}" for n in range(150)))
    await handle.cancel()
    await mcp.until_event("slow_cancelled", timeout_s=20)
    with pytest.raises(WorkflowFailureError):
        await asyncio.wait_for(handle.result(), timeout=30)


async def test_a_changed_tool_list_is_served_with_a_new_catalog_without_stopping(
    own: McpStack,
) -> None:
    mcp = own
    grown = {"steps": [{"id": "s1", "tool": "tb_grown", "args": {}}]}
    with pytest.raises(WorkflowFailureError) as before:
        await mcp.run(grown)
    assert "UnknownTool" in str(before.value.cause)
    # A path and a tool result cached under the old tools (the fast path serves the path).
    question = f"look up k{uuid.uuid4().hex[:10]}"
    assert (await mcp.ask(question))["cache"] == "miss"
    assert (await mcp.ask(question))["workflow_id"] == "", "served by the fast path"
    gateway = await mcp.start_gateway()  # a long-lived client, started under the old tools
    assert (await _via(gateway, question))["state"] == "answered", "its fast path serves it"
    growing = await mcp.start({"steps": [{"id": "s1", "tool": "tb_grow", "args": {}}]})
    grew = await asyncio.wait_for(growing.result(), timeout=60)  # the run in flight ends
    assert _steps(grew)["s1"]["status"] == "succeeded"
    log = mcp.state / "worker-0.log"
    for _ in range(600):  # the next generation serves, then the one before has drained
        if "worker_serving_catalog" in log.read_text():
            break
        await asyncio.sleep(0.1)
    said = log.read_text()
    assert "worker_serving_new_catalog" in said and "worker_serving_catalog" in said, said[-3000:]
    worker = mcp.workers[0]
    assert worker.returncode is None, "the same worker process serves on"
    result = await mcp.run(grown)
    assert "grown" in json.dumps(_steps(result)["s1"]["output"])
    # That run's question, the first under the new catalog, found neither the path nor the
    # tool result: the gateway's fast path (the old version withdrawn) starts a run too.
    await asyncio.sleep(CHECK_EVERY_S + 0.2)
    anew = await _via(gateway, question)
    assert anew["state"] == "completed" and anew["workflow_id"], anew
    key = question.split()[-1]
    assert mcp.calls("lookup_called", key=key) == 2, "the old tool result was not reused"
    # Clients read under the version the next generation publishes: a new one's fast path
    # hits, and so does the gateway's, which started under the old tools.
    assert (await mcp.ask(question))["workflow_id"] == ""
    assert (await _via(gateway, question))["state"] == "answered"
    assert worker.returncode is None and len(mcp.workers) == 2, "no worker was started again"


async def _via(gateway: str, question: str, timeout_s: float = 45) -> dict[str, Any]:
    """`POST /v1/runs?wait=true`: answered (`200`) or, past `timeout_s`, running (`202`)."""
    body = {"question": question, "actor": {"role": "operator"}}
    params = {"wait": "true", "timeout_s": str(timeout_s)}
    async with httpx.AsyncClient(timeout=timeout_s + 30) as http:
        answer = await http.post(f"{gateway}/v1/runs", params=params, json=body)
    assert answer.status_code in (200, 202), answer.text
    view: dict[str, Any] = answer.json()
    return view


async def test_an_http_server_restarted_is_reached_again(
    mcp: McpStack, shared: tuple[McpStack, Everything]
) -> None:
    plan = {"steps": [{"id": "s1", "tool": "everything_echo", "args": {"message": "one"}}]}
    assert _steps(await mcp.run(plan))["s1"]["status"] == "succeeded"
    everything = shared[1]
    await everything.stop()
    await everything.start()  # a new process: the worker's session is gone with the old one
    plan["steps"][0]["args"] = {"message": "two"}
    again = _steps(await mcp.run(plan))["s1"]
    assert again["status"] == "succeeded" and "two" in again["output"]["text"]
