"""Connecting to Temporal with agentkeel's plugins (pydantic JSON converter, LangGraph)."""

from __future__ import annotations

from temporalio.client import Client

from workers.plugin import agentkeel_plugins
from workers.settings import Settings


async def connect(settings: Settings) -> Client:
    return await Client.connect(
        settings.temporal_address,
        namespace=settings.temporal_namespace,
        plugins=agentkeel_plugins(),
    )
