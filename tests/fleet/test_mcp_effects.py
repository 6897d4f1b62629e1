"""An MCP side effect is the effect its arguments name, and a misbehaving server degrades
its own tools only.

`server-memory`'s `delete_entities` needs an approval (the deployment's configuration) and
declares no identity arguments, so every argument names the effect: deleting note B after
an approver saw "delete note A" waits for a decision of its own. The toolbox's tool list
growing a tool with a reserved argument name is served by the worker's next generation
(the same process), which serves every other tool and refuses that one, saying why.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import asyncpg
import pytest
from temporalio.client import Client, WorkflowFailureError, WorkflowHandle

from agentkeel.schemas.names import AGENT_WORKFLOW, APPROVE_UPDATE
from tests.support.history import awaiting_approval
from tests.support.mcp_stack import OPERATOR, McpStack, mcp_stack


@pytest.fixture
async def mcp(
    client: Client, admin_dsn: str, template_database: str, redis_url: str, tmp_path: Path
) -> AsyncIterator[McpStack]:
    async with mcp_stack(client, admin_dsn, template_database, redis_url, tmp_path) as both:
        yield both[0]


def _names(state: Path) -> set[str]:
    path = state / "memory.jsonl"
    lines = path.read_text().splitlines() if path.exists() else []
    return {e["name"] for e in map(json.loads, lines) if e.get("type") == "entity"}


def _delete(step_id: str, name: str, *after: str) -> dict[str, object]:
    args = {"entityNames": [name]}
    return {"id": step_id, "tool": "memory_delete_entities", "args": args, "after": list(after)}


async def test_one_approval_approves_one_delete_not_the_next(mcp: McpStack) -> None:
    notes: list[dict[str, object]] = [
        {"name": n, "entityType": "note", "observations": []} for n in ("a", "b")
    ]
    made = {"steps": [{"id": "s1", "tool": "memory_create_entities", "args": {"entities": notes}}]}
    await mcp.run(made)
    handle = await mcp.start({"steps": [_delete("s1", "a"), _delete("s2", "b", "s1")]})
    first = await awaiting_approval(handle)
    seen = first["args"]["entityNames"]
    assert seen == ["a"]
    await handle.execute_update(
        APPROVE_UPDATE, {"approved": True, "approver": "bea", "approval_id": first["approval_id"]}
    )
    second = await awaiting_approval_other_than(handle, first["approval_id"])
    assert second["args"]["entityNames"] != seen, "the other delete waits for its own decision"
    assert set(second["args"]["entityNames"]) <= _names(mcp.state), "and has not been made"
    await handle.execute_update(
        APPROVE_UPDATE,
        {"approved": False, "approver": "bea", "approval_id": second["approval_id"]},
    )
    result = await asyncio.wait_for(handle.result(), timeout=60)
    assert [s["status"] for s in result["steps"]] == ["succeeded", "failed"]
    assert _names(mcp.state) == set(second["args"]["entityNames"])


async def awaiting_approval_other_than(
    handle: WorkflowHandle[Any, Any], approval_id: int
) -> dict[str, Any]:
    for _ in range(100):
        awaiting = await awaiting_approval(handle)
        if awaiting["approval_id"] != approval_id:
            return awaiting
        await asyncio.sleep(0.1)
    raise AssertionError(f"no approval asked after approval {approval_id}")


async def test_a_tool_with_a_reserved_argument_is_refused_and_the_rest_served(
    mcp: McpStack,
) -> None:
    grow = await mcp.start({"steps": [{"id": "s1", "tool": "tb_grow_bad", "args": {}}]})
    worker = mcp.workers[0]
    assert (await asyncio.wait_for(grow.result(), timeout=60))["steps"][0]["status"] == (
        "succeeded"
    )
    log = mcp.state / "worker-0.log"
    for _ in range(600):  # the next generation, with the new list, serves
        if "worker_serving_catalog" in log.read_text():
            break
        await asyncio.sleep(0.1)
    assert "worker_serving_catalog" in log.read_text()
    with pytest.raises(WorkflowFailureError) as refused:
        await mcp.run({"steps": [{"id": "s1", "tool": "tb_bad", "args": {"tenant": "x"}}]})
    said = str(refused.value.cause)
    assert "UnknownTool" in said and "not served" in said and "tenant" in said
    looked = await mcp.run({"steps": [{"id": "s1", "tool": "tb_lookup", "args": {"key": "k"}}]})
    assert looked["steps"][0]["status"] == "succeeded", "the server's other tools serve"
    time = {"id": "s1", "tool": "time_get_current_time", "args": {"timezone": "UTC"}}
    assert (await mcp.run({"steps": [time]}))["steps"][0]["status"] == "succeeded"
    assert worker.returncode is None, "the worker keeps serving, never restarted"


async def test_an_mcp_side_effect_on_a_target_the_request_never_named_is_refused(
    mcp: McpStack,
) -> None:
    """The domain's planner here obeys an injected instruction (a pattern standing in for a
    compromised model): "tidy up after lunch" plans forgetting "everything"."""
    refused = await _asked(mcp, "tidy up after lunch")
    [step] = refused["steps"]
    assert step["status"] == "failed" and step["error"]["type"] == "UntrustedArgument"
    assert mcp.calls("forgotten") == 0, "the server never saw the call"
    asked = await _asked(mcp, "forget lunch")
    assert asked["steps"][0]["status"] == "succeeded"
    assert mcp.calls("forgotten", name="lunch") == 1


async def test_an_mcp_effect_the_request_refuses_is_refused(mcp: McpStack) -> None:
    """`tb_append` names no asking words: its name's verb is read refused ("don't append
    apples"), so a plan appending apples is refused before the server sees it; a plan
    appending what is asked runs."""
    refused = await _asked(mcp, "don't append apples. append pears")
    [step] = refused["steps"]
    assert step["status"] == "failed" and step["error"]["type"] == "UntrustedArgument", step
    assert "apples" in step["error"]["message"]
    assert mcp.calls("append_started", text="apples") == 0, "the server never saw the call"
    asked = await _asked(mcp, "never mind apples. append pears")
    assert asked["steps"][0]["status"] == "succeeded", asked["steps"]
    assert mcp.calls("append_started", text="pears") == 1


async def _asked(mcp: McpStack, question: str) -> dict[str, Any]:
    """A run of `question` (no plan of the caller's: the domain's planner writes it)."""
    handle = await mcp.client.start_workflow(
        AGENT_WORKFLOW,
        {"question": question, "actor": OPERATOR, "options": {"use_cache": False}},
        id=f"mcp-{uuid.uuid4().hex[:12]}",
        task_queue=mcp.queue,
        result_type=dict,
    )
    result: dict[str, Any] = await asyncio.wait_for(handle.result(), timeout=45)
    return result


async def test_a_role_the_server_leaves_out_is_refused_before_any_claim(mcp: McpStack) -> None:
    """The toolbox allows operators only: a viewer's `append` is refused by the workflow
    before the ledger claims it (the ledger shows the refusal, never a claim) and before
    the server sees it."""
    viewer = {"role": "viewer", "name": "vic"}
    appended = {"id": "s1", "tool": "tb_append", "args": {"text": "by a viewer"}}
    handle = await mcp.start({"steps": [appended]}, actor=viewer)
    result = await asyncio.wait_for(handle.result(), timeout=45)
    [step] = result["steps"]
    assert step["status"] == "failed" and step["error"]["type"] == "NotAuthorized"
    assert "viewer" in step["error"]["message"] and "operator" in step["error"]["message"]
    assert mcp.calls("append_started", text="by a viewer") == 0
    conn = await asyncpg.connect(mcp.env["AGENTKEEL_DATABASE_URL"])
    try:
        statuses = await conn.fetch(
            "SELECT status, error_type FROM agent_effects WHERE workflow_id = $1", handle.id
        )
    finally:
        await conn.close()
    assert [(r["status"], r["error_type"]) for r in statuses] == [("refused", "NotAuthorized")]
