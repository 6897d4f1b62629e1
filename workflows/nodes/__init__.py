"""The agent graph's nodes (each runs inline in the workflow) and its conditional edges."""

from workflows.nodes.graph_nodes import (
    after_cache,
    after_join,
    after_route,
    execute,
    join,
    lookup_cache,
    plan,
    respond,
    route,
    store,
)

__all__ = [
    "after_cache",
    "after_join",
    "after_route",
    "execute",
    "join",
    "lookup_cache",
    "plan",
    "respond",
    "route",
    "store",
]
