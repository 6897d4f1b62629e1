"""The front doors' side of budgets without a server: whose usage a gateway run counts as,
and the named error MCP's `start_run` gives when a key's budget is spent."""

from __future__ import annotations

import pytest
from mcp.server.mcpserver.exceptions import ToolError

from agentkeel.client.budgets import BudgetExhaustedError
from agentkeel.gateway.keys import ApiKey, Caller
from agentkeel.gateway.mcp.tools import _answer
from agentkeel.schemas.actor import Actor
from agentkeel.schemas.request import AgentRequest


def test_a_gateway_run_counts_as_its_keys_whatever_the_request_says() -> None:
    key = ApiKey(token="k" * 32, tenant="acme", actor=Actor(role="staff", name="ops"))
    caller = Caller(key)
    admitted = caller.admit(AgentRequest(question="q", usage_key="someone-else"))
    assert admitted.usage_key == caller.quota_id == key.digest.hex()[:16]
    keyless = Caller(None)
    assert keyless.admit(AgentRequest(question="q")).usage_key == "keyless"
    assert keyless.admit(AgentRequest(question="q", usage_key="team-a")).usage_key == "team-a"


async def test_mcp_start_run_names_a_spent_budget() -> None:
    async def start() -> None:
        raise BudgetExhaustedError(
            "key", "abc", spent="120 tokens", limit="100 tokens", window_s=3600, retry_after_s=42
        )

    with pytest.raises(ToolError) as refused:
        await _answer(start())
    message = str(refused.value)
    assert message.startswith("429: BudgetExhausted: this key has used 120 tokens")
    assert "try again in 42s" in message
