"""The agent graph: a LangGraph `StateGraph` executed through Temporal's LangGraph plugin.

lookup_cache → route → [plan] → execute → join ⟲ plan (bounded) → respond → store
(a cache hit goes straight to store, to be recorded; a plan hit to execute; a run that
continues another starts at execute, and one whose watches stopped for a continue-as-new
ends after execute)
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from typing import Any
from weakref import WeakKeyDictionary

from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from opentelemetry import trace
from temporalio.langgraph import graph as registered_graph

from agentkeel.workflows import nodes
from agentkeel.workflows.state import AgentState

AGENT_GRAPH = "agent"

_INLINE = {"execute_in": "workflow"}

_compiled: WeakKeyDictionary[StateGraph[Any, Any, Any, Any], CompiledStateGraph[Any, Any, Any, Any]]
_compiled = WeakKeyDictionary()
"""Compiled graphs by the plugin's graph they came from: one compile per worker, not per run.

A compiled graph holds no run state (each `ainvoke` builds its own channels), so runs share
it; compiling took about 8 % of the CPU worker under load. This module is passed through
the sandbox (`schemas.plugin`), so the memo outlives a run; it is keyed by the plugin's own
graph object, so two workers (or a worker and a replayer) never share one by mistake."""


def compiled_graph(name: str) -> CompiledStateGraph[Any, Any, Any, Any]:
    """The named graph of the plugin this run's worker runs, compiled once per worker."""
    source = registered_graph(name)
    app = _compiled.get(source)
    if app is None:
        app = _compiled[source] = source.compile()
    return app


Node = Callable[[AgentState], Awaitable[dict[str, Any]]]


def _traced(name: str, node: Node) -> Any:
    """The node inside a span `agent.<name>` (a no-op unless tracing is configured; with the
    Temporal OpenTelemetry plugin's replay-safe provider, never emitted while replaying)."""

    @functools.wraps(node)
    async def run(state: AgentState) -> dict[str, Any]:
        tracer = trace.get_tracer("agentkeel.workflow")
        with tracer.start_as_current_span(f"agent.{name}", attributes={"agentkeel.node": name}):
            return await node(state)

    return run


def build_agent_graph() -> StateGraph[Any, Any, Any, Any]:
    """A fresh graph: the plugin rewrites node callables, so each plugin needs its own."""
    graph: StateGraph[Any, Any, Any, Any] = StateGraph(AgentState)
    for name, node in (
        ("lookup_cache", nodes.lookup_cache),
        ("given_plan", nodes.given_plan),
        ("route", nodes.route),
        ("plan", nodes.plan),
        ("execute", nodes.execute),
        ("join", nodes.join),
        ("respond", nodes.respond),
        ("store", nodes.store),
    ):
        graph.add_node(name, _traced(name, node), metadata=dict(_INLINE))
    graph.add_conditional_edges(
        START,
        nodes.at_start,
        {"resume": "execute", "new": "lookup_cache", "given": "given_plan"},
    )
    graph.add_edge("given_plan", "execute")
    graph.add_conditional_edges(
        "lookup_cache", nodes.after_cache, {"hit": "store", "plan": "execute", "miss": "route"}
    )
    graph.add_conditional_edges(
        "route",
        nodes.after_route,
        {"confident": "execute", "planned": "execute", "unsure": "plan"},
    )
    graph.add_edge("plan", "execute")
    graph.add_conditional_edges(
        "execute",
        nodes.after_execute,
        {"continue_as_new": END, "judge": "join", "answer": "respond"},
    )
    graph.add_conditional_edges("join", nodes.after_join, {"replan": "plan", "finish": "respond"})
    graph.add_edge("respond", "store")
    graph.add_edge("store", END)
    return graph
