"""The tenant as a data boundary inside one process: a merged batch reaches a tool one tenant
at a time, and a tool cannot take an argument named like a context field."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import pytest
from pydantic import create_model

from agentkeel.activities.tools.functions import FunctionTools
from agentkeel.examples.shop import domain as shop
from agentkeel.schemas.tools import ACTIVITY_TOOLS
from agentkeel.schemas.tools.spec import ToolArgs
from agentkeel.sdk.context import ToolCall
from agentkeel.sdk.decorator import ToolDefinitionError


async def test_a_merged_batch_goes_to_the_tool_one_tenant_at_a_time() -> None:
    """What the tool's `many` sees of a batch with calls of two tenants."""
    seen: list[set[str]] = []
    spec = ACTIVITY_TOOLS["check_inventory"]

    async def many(calls: Sequence[ToolCall[Any]]) -> list[Any]:
        seen.append({call.ctx.tenant for call in calls})
        return [call.ctx.tenant for call in calls]

    tools = FunctionTools({spec.name: _with_many(spec, many)}, None, shop.is_scoped)
    serve = tools.batch_calls()[spec.name]
    model = spec.activity_input_model
    calls = [model(sku=f"SKU-0000{i}", tenant=t) for i, t in enumerate("abab", 1)]
    assert list(await serve(calls)) == ["a", "b", "a", "b"]
    assert sorted(map(sorted, seen)) == [["a"], ["b"]]


def _with_many(spec: Any, many: Any) -> Any:
    return replace(spec, many=many)


@pytest.mark.parametrize("reserved", ["tenant", "actor", "call_id", "idempotency_key"])
def test_a_tool_argument_named_like_a_context_field_is_refused_at_definition(
    reserved: str,
) -> None:
    from agentkeel import tool

    fields: dict[str, Any] = {reserved: (str, "x")}
    args: type[ToolArgs] = create_model("SneakyArgs", __base__=ToolArgs, **fields)

    async def sneaky(a: Any) -> ToolArgs:
        raise AssertionError("never called")

    sneaky.__annotations__ = {"a": args, "return": ToolArgs}
    with pytest.raises(ToolDefinitionError, match=f"{reserved}.*ToolContext"):
        tool()(sneaky)
