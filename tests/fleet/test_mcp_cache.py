"""MCP tools under the cache and the intents, through the unchanged binaries end to end.

A worker of `tests/domains/mcp_domain` serves the suite's toolbox (`tests/support/mcp_toolbox.py`),
which counts the calls that reach it; questions are asked with `agentkeel ask`, a process
of its own whose `AgentClient` has the exact-tier fast path, as a service would have.
Keys and questions are fresh per run: the Redis of the suite outlives it.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import Client

from tests.support.mcp_stack import McpStack, mcp_stack


@pytest.fixture(scope="module")
async def mcp(
    client: Client,
    admin_dsn: str,
    template_database: str,
    redis_url: str,
    tmp_path_factory: pytest.TempPathFactory,
) -> AsyncIterator[McpStack]:
    state = tmp_path_factory.mktemp("mcp-cache")
    async with mcp_stack(client, admin_dsn, template_database, redis_url, state) as both:
        yield both[0]


def _fresh() -> str:
    return "k" + uuid.uuid4().hex[:10]


def _step(result: dict[str, Any]) -> dict[str, Any]:
    (step,) = result["steps"]
    return step


async def test_an_idempotent_read_is_served_from_the_tool_cache_and_an_effect_never(
    mcp: McpStack,
) -> None:
    key = _fresh()
    read = {"steps": [{"id": "s1", "tool": "tb_lookup", "args": {"key": key}}]}
    first, second = await mcp.run(read), await mcp.run(read)
    assert (
        _step(first)["output"]
        == _step(second)["output"]
        == {
            "key": key,
            "value": f"value of {key}",
        }
    )
    assert mcp.calls("lookup_called", key=key) == 1, "the second run's call never left"
    other = {"steps": [{"id": "s1", "tool": "tb_lookup", "args": {"key": key + "x"}}]}
    await mcp.run(other)
    assert mcp.calls("lookup_called", key=key + "x") == 1, "other arguments: another entry"

    # `append` is destructive: its configured TTL is dropped, and every run reaches it.
    text = _fresh()
    effect = {"steps": [{"id": "s1", "tool": "tb_append", "args": {"text": text}}]}
    for request in ("a", "b"):
        handle = await mcp.start(effect, request_id=f"{text}-{request}")
        assert _step(await handle.result())["status"] == "succeeded"
    assert mcp.calls("append_started", text=text) == 2


async def test_the_clients_fast_path_hits_for_an_mcp_domain(mcp: McpStack) -> None:
    key = _fresh()
    asked = await mcp.ask(f"look up {key}")
    assert asked["cache"] == "miss" and asked["workflow_id"]
    assert _step(asked)["output"]["value"] == f"value of {key}"
    again = await mcp.ask(f"look up {key}")
    # Answered by the client itself from the exact tier: no run started (a run's own
    # lookup would say `exact` too, but with its workflow id).
    assert again["cache"] == "exact" and again["workflow_id"] == ""
    assert _step(again)["output"] == _step(asked)["output"]
    assert mcp.calls("lookup_called", key=key) == 1


async def test_a_declared_intent_admits_the_mcp_effect_the_configuration_put_in_it(
    mcp: McpStack,
) -> None:
    text = _fresh()
    noted = await mcp.ask(f"note {text}")
    assert noted["route"]["intent"] == "notes"
    assert _step(noted)["status"] == "succeeded", _step(noted)
    ledger = _ledger(mcp.state)
    assert [line["text"] for line in ledger if line["text"] == text] == [text]


def _ledger(state: Path) -> list[dict[str, Any]]:
    path = state / "toolbox" / "ledger.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []
