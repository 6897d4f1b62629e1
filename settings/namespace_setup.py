"""Registering agentkeel's search attributes on a namespace (idempotent)."""

from __future__ import annotations

from typing import Any

from temporalio.api.enums.v1 import IndexedValueType
from temporalio.api.operatorservice.v1 import (
    AddSearchAttributesRequest,
    ListSearchAttributesRequest,
)
from temporalio.client import Client
from temporalio.common import SearchAttributeIndexedValueType, SearchAttributeKey

from agentkeel.schemas.search_attributes import ALL_KEYS
from agentkeel.settings.model import StartupError


class SearchAttributesError(StartupError):
    """The namespace lacks agentkeel's search attributes and they could not be added."""


async def ensure_search_attributes(client: Client, namespace: str) -> None:
    have = await client.operator_service.list_search_attributes(
        ListSearchAttributesRequest(namespace=namespace)
    )
    missing = {
        key.name: IndexedValueType.ValueType(key.indexed_value_type.value)
        for key in ALL_KEYS
        if key.name not in have.custom_attributes
    }
    if not missing:
        return
    try:
        await client.operator_service.add_search_attributes(
            AddSearchAttributesRequest(namespace=namespace, search_attributes=missing)
        )
    except Exception as exc:
        wanted = [key for key in ALL_KEYS if key.name in missing]
        names = ", ".join(f"{key.name}={_type_name(key)}" for key in wanted)
        raise SearchAttributesError(
            f"namespace {namespace!r} lacks search attributes {names} and adding them failed "
            f"({exc}); register them once with `temporal operator search-attribute create`"
        ) from exc


def dev_server_flags() -> list[str]:
    """`--search-attribute` flags for `temporal server start-dev`."""
    flags: list[str] = []
    for key in ALL_KEYS:
        flags += ["--search-attribute", f"{key.name}={_type_name(key)}"]
    return flags


def _type_name(key: SearchAttributeKey[Any]) -> str:
    """How the CLI and the dev server name a type: `Keyword`, `Bool`, ..."""
    names = {
        SearchAttributeIndexedValueType.KEYWORD: "Keyword",
        SearchAttributeIndexedValueType.BOOL: "Bool",
        SearchAttributeIndexedValueType.INT: "Int",
        SearchAttributeIndexedValueType.TEXT: "Text",
    }
    return names[key.indexed_value_type]
