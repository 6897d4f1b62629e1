"""The business entities a tool call touched, for invalidating what was cached about them.

Which fields name an entity is the served domain's to say (`Domain.entity_args`,
`Domain.entity_lists`): a side effect on ticket 7 invalidates what was cached about
`ticket_id:7`, wherever in arguments or results it appears.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from agentkeel.sdk.serving import active_domain


def entities_in(*values: Any) -> set[str]:
    """`"ticket_id:7"`-style names of every entity field anywhere in `values`."""
    domain = active_domain()
    fields, lists = frozenset(domain.entity_args), dict(domain.entity_lists)
    found: set[str] = set()
    for value in values:
        _walk(value, found, fields, lists)
    return found


def _walk(value: Any, found: set[str], fields: frozenset[str], lists: dict[str, str]) -> None:
    if isinstance(value, Mapping):
        for key, item in value.items():
            if key in fields and isinstance(item, str | int) and item != "":
                found.add(f"{key}:{str(item).lower()}")
            elif key in lists and isinstance(item, list):
                found.update(f"{lists[key]}:{v}" for v in item)
            else:
                _walk(item, found, fields, lists)
    elif isinstance(value, list):
        for item in value:
            _walk(item, found, fields, lists)
