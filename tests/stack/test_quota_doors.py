"""Every door under the same quotas: runs started through `/mcp` count with those of
`POST /v1/runs`, and a watch asked for in words counts as a watch (and is held to the
watch limit: over it, its watch step fails before it waits)."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import mcp.types as types
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from agentkeel.gateway.keys import ApiKeys
from agentkeel.schemas import errors, names
from agentkeel.schemas.actor import Actor
from agentkeel.schemas.progress import RunProgress
from agentkeel.schemas.result import AgentResult
from tests.support.agent_stack import AgentStack
from tests.support.gateway_http import BOUND_S, bearer, gateway, key

WATCH_IN_WORDS = "Tell me when order 1002 ships"
TOKEN = "k" * 32


async def _start_run(client: Client) -> types.CallToolResult:
    args: dict[str, Any] = {
        "question": WATCH_IN_WORDS,
        "request_id": uuid.uuid4().hex,  # one run each: equal requests would share one
        "wait_s": 0.5,
    }
    return await client.call_tool("start_run", args)


async def test_runs_started_through_mcp_count_toward_the_runs_quota(stack: AgentStack) -> None:
    keys = ApiKeys([key(TOKEN, stack.tenant, Actor(role="staff", name="ann"))])
    async with gateway(stack, keys, gateway_runs_per_key=2) as http:
        url = str(http.base_url).rstrip("/") + "/mcp"
        transport = streamable_http_client(url, http_client=create_mcp_http_client(bearer(TOKEN)))
        async with Client(transport, cache=None) as client:
            started = [await _start_run(client) for _ in range(2)]
            assert not any(r.is_error for r in started), started
            refused = await _start_run(client)
        assert refused.is_error
        said = " ".join(c.text for c in refused.content if isinstance(c, types.TextContent))
        assert "429" in said and "2 runs in flight" in said, said
        # The HTTP door counts the same two.
        body = {"question": WATCH_IN_WORDS, "request_id": uuid.uuid4().hex}
        over = await http.post("/v1/runs", json=body, headers=bearer(TOKEN))
        assert over.status_code == 429, over.text


async def test_a_watch_asked_for_in_words_counts_as_a_watch(stack: AgentStack) -> None:
    async with gateway(stack, gateway_watches_per_key=1, gateway_lease_s=3) as http:
        body = {"question": WATCH_IN_WORDS, "tenant": stack.tenant}
        started = await http.post("/v1/runs", json=body)
        assert started.status_code == 202, started.text
        handle = stack.client.get_workflow_handle(started.json()["workflow_id"])
        stack.started.append(handle)
        await _until_watching(handle)
        options = {"watch_every_s": 1, "use_cache": False}
        explicit = {**body, "request_id": uuid.uuid4().hex, "options": options}
        refused = await http.post("/v1/runs", json=explicit)
        assert refused.status_code == 429, refused.text
        assert refused.json()["quota"] == "watches"
        # A second watch in words starts (nothing said it would watch), and its watch
        # step fails before it waits: the key's one watch is taken.
        again = {**body, "request_id": uuid.uuid4().hex, "options": {"use_cache": False}}
        second = await http.post("/v1/runs", json=again)
        assert second.status_code == 202, second.text
        over = stack.client.get_workflow_handle(
            second.json()["workflow_id"], result_type=AgentResult
        )
        stack.started.append(over)
        result = await asyncio.wait_for(over.result(), BOUND_S)
        refusals = [s.error for s in result.steps if s.error is not None]
        watch = next((e for e in refusals if e.type == errors.WATCH_QUOTA_FULL), None)
        assert watch is not None, refusals
        assert "1 watching runs in flight" in watch.message, watch


async def _until_watching(handle: Any) -> None:
    """Until the run waits on its watch (`progress.waiting`)."""
    async with asyncio.timeout(BOUND_S):
        for _ in range(int(BOUND_S * 5)):
            progress = await handle.query(names.PROGRESS_QUERY, result_type=RunProgress)
            if progress.waiting:
                return
            await asyncio.sleep(0.2)
    raise AssertionError("the run never waited on its watch")
