"""The catalog: every tool by name, and a digest of what its results mean."""

from __future__ import annotations

import hashlib
import json
from functools import cache

from agentkeel.schemas.tools.customers import FIND_CUSTOMER, LIST_ORDERS
from agentkeel.schemas.tools.inventory import CHECK_INVENTORY
from agentkeel.schemas.tools.knowledge import SEARCH_KB
from agentkeel.schemas.tools.orders import GET_ORDER
from agentkeel.schemas.tools.refunds import CREATE_REFUND
from agentkeel.schemas.tools.shipping import TRACK_SHIPMENT
from agentkeel.schemas.tools.spec import ToolSpec
from agentkeel.schemas.tools.timers import WAIT

TOOLS: dict[str, ToolSpec] = {
    spec.name: spec
    for spec in (
        FIND_CUSTOMER,
        LIST_ORDERS,
        GET_ORDER,
        CHECK_INVENTORY,
        TRACK_SHIPMENT,
        SEARCH_KB,
        CREATE_REFUND,
        WAIT,
    )
}
"""A tool's name is its activity type name: a contract, in every run's history. (Built-ins
such as `wait` run in the workflow itself and have no activity.)"""

ACTIVITY_TOOLS: dict[str, ToolSpec] = {
    name: spec for name, spec in TOOLS.items() if not spec.runs_in_workflow
}
"""The tools a worker serves as activities."""


SIDE_EFFECT_TOOLS: frozenset[str] = frozenset(
    name for name, spec in TOOLS.items() if not spec.idempotent
)
"""Tools that change something: never cached, never replayed, idempotency keys, approval."""


def has_side_effect(tool: str) -> bool:
    """True for a side-effecting tool, and for a name the catalog does not know (unsafe)."""
    return tool in SIDE_EFFECT_TOOLS or tool not in TOOLS


@cache
def catalog_version() -> str:
    """A short digest of everything about the tools that changes what a cached result means."""
    described = [
        {
            "name": spec.name,
            "args": spec.args_model.model_json_schema(),
            "result": spec.result_model.model_json_schema(),
            "idempotent": spec.idempotent,
            "ttl": spec.cache_ttl.total_seconds() if spec.cache_ttl else None,
        }
        for spec in TOOLS.values()
    ]
    return hashlib.sha256(json.dumps(described, sort_keys=True).encode()).hexdigest()[:12]
