"""The workers' Temporal client: the agentkeel plugin plus LangGraph's, which carries the graph.

Workers inherit the client's plugins, so the graph is registered once, here. Services that
only start runs use `client`, which connects without LangGraph.
"""

from __future__ import annotations

from temporalio.client import Client
from temporalio.langgraph import LangGraphPlugin
from temporalio.plugin import SimplePlugin

from agentkeel.schemas.plugin import agentkeel_plugin
from agentkeel.settings.connections import connect_temporal
from agentkeel.settings.model import Settings
from agentkeel.workflows.graph import AGENT_GRAPH, build_agent_graph


def agentkeel_plugins() -> list[SimplePlugin]:
    """Plugins for a worker's client (and every worker built from it)."""
    return [agentkeel_plugin(), LangGraphPlugin(graphs={AGENT_GRAPH: build_agent_graph()})]


async def connect(settings: Settings) -> Client:
    return await connect_temporal(settings, agentkeel_plugins())
