"""The agent graph's nodes (each runs inline in the workflow) and its conditional edges.

`cache_lookup`, `model_calls` (route, plan, join, respond), `plan_execution` and
`run_record` hold the nodes; `edges` the routing between them. A new node is a module
here plus its line in `workflows.graph`.
"""

from agentkeel.workflows.nodes.cache_lookup import lookup_cache
from agentkeel.workflows.nodes.edges import (
    after_cache,
    after_execute,
    after_join,
    after_route,
    at_start,
)
from agentkeel.workflows.nodes.given_plan import given_plan
from agentkeel.workflows.nodes.join import join
from agentkeel.workflows.nodes.model_calls import plan, respond, route
from agentkeel.workflows.nodes.plan_execution import execute
from agentkeel.workflows.nodes.run_record import store

__all__ = [
    "after_cache",
    "after_execute",
    "after_join",
    "after_route",
    "at_start",
    "execute",
    "given_plan",
    "join",
    "lookup_cache",
    "plan",
    "respond",
    "route",
    "store",
]
