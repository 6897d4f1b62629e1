"""Connecting to Temporal with agentkeel's plugins (pydantic JSON converter, LangGraph)."""

from __future__ import annotations

from temporalio.client import Client
from temporalio.service import RPCError

from workers.plugin import agentkeel_plugins
from workers.settings import Settings, StartupError


async def connect(settings: Settings) -> Client:
    try:
        return await Client.connect(
            settings.temporal_address,
            namespace=settings.temporal_namespace,
            plugins=agentkeel_plugins(),
        )
    except (RuntimeError, RPCError) as exc:
        raise StartupError(
            f"cannot reach Temporal at {settings.temporal_address} ({exc}); "
            "start the stack with `agentkeel up --detach`"
        ) from None
