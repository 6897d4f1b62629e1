"""The business entities a tool call touched, for invalidating what was cached about them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

ENTITY_FIELDS = frozenset({"order_id", "customer_id", "sku", "tracking_number", "email"})
_LIST_FIELDS = {"order_ids": "order_id"}


def entities_in(*values: Any) -> set[str]:
    """`"order_id:1001"`-style names of every entity field anywhere in `values`."""
    found: set[str] = set()
    for value in values:
        _walk(value, found)
    return found


def _walk(value: Any, found: set[str]) -> None:
    if isinstance(value, Mapping):
        for key, item in value.items():
            if key in ENTITY_FIELDS and isinstance(item, str | int) and item != "":
                found.add(f"{key}:{str(item).lower()}")
            elif key in _LIST_FIELDS and isinstance(item, list):
                found.update(f"{_LIST_FIELDS[key]}:{v}" for v in item)
            else:
                _walk(item, found)
    elif isinstance(value, list):
        for item in value:
            _walk(item, found)
