"""The gateway of a test's stack, served by uvicorn on a free port, and its API keys as a
plain HTTP client (httpx) sends them."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx

from agentkeel.client.agent_client import AgentClient
from agentkeel.gateway.app import create_app
from agentkeel.gateway.keys import ApiKey, ApiKeys
from agentkeel.gateway.server import serving
from agentkeel.schemas.actor import Actor
from agentkeel.settings.ports import free_port
from tests.support.agent_stack import AgentStack

QUESTION = "What is your return policy for damaged items?"
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
