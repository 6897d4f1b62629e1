"""A domain's tool functions as Temporal activities, one per tool, named after the tool.

Each activity decodes the tool's input model (the plan's arguments plus what the workflow
adds: the actor, the tenant, the call id, a side effect's idempotency key), builds the call's
`ToolContext` and calls the function. What every tool call goes through besides (shared
reads, the result cache, merged calls, caps, heartbeats) wraps these in
`workers.cache_assembly.tool_activities`, in one order for every tool.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from pydantic import BaseModel
from temporalio import activity
from temporalio.exceptions import ApplicationError

from agentkeel.activities.heartbeat import heartbeating
from agentkeel.activities.tools.arguments import checked_arguments
from agentkeel.schemas.tools.spec import ToolSpec
from agentkeel.sdk.context import ToolCall, ToolContext

__all__ = ["FunctionTools"]

SIDE_EFFECT_HEARTBEAT_EVERY_S = 0.5
"""Well inside the tool heartbeat timeout (`workflows.timeouts.TOOL_HEARTBEAT`): a side
effect heartbeats while it runs, and only then, so a cancel reaches it before its commit
and never after (a heartbeat after the commit would report an effect made as not)."""

DEFAULT_TENANT = "default"
"""The tenant of a call whose input names none (scheduled before tenants travelled)."""

Many = Callable[[Sequence[Any]], Awaitable[Sequence[Any]]]


class FunctionTools:
    """The activities of `tools`, whose functions get `resources` in their context.

    Args:
        tools: The domain's activity tools by name (`schemas.tools.ACTIVITY_TOOLS`).
        resources: What the domain's `resources` factory opened for this worker.
        is_scoped: Whether a role acts for one subject only (the domain's ownership rule).
    """

    def __init__(
        self,
        tools: Mapping[str, ToolSpec],
        resources: Any,
        is_scoped: Callable[[str], bool],
    ) -> None:
        self._tools = dict(tools)
        self._resources = resources
        self._is_scoped = is_scoped

    def all_activities(self) -> list[Callable[..., Any]]:
        """One activity per tool, for `Worker(activities=...)` (after the wrappers)."""
        return [self._activity(spec) for spec in self._tools.values()]

    def batch_calls(self) -> dict[str, Many]:
        """For each tool with a `many` function: what serves many of its calls at once."""
        return {name: self._many(spec) for name, spec in self._tools.items() if spec.many}

    def context(self, args: BaseModel) -> ToolContext:
        return ToolContext(
            actor=getattr(args, "actor", None),
            resources=self._resources,
            idempotency_key=getattr(args, "idempotency_key", None),
            call_id=getattr(args, "call_id", None),
            tenant=getattr(args, "tenant", DEFAULT_TENANT),
            is_scoped=self._is_scoped,
        )

    def _activity(self, spec: ToolSpec) -> Callable[..., Any]:
        fn = spec.fn
        assert fn is not None, f"{spec.name} is a built-in, not an activity"
        takes_context = spec.takes_context
        side_effect = not spec.idempotent

        authorize = spec.authorize

        async def call(args: Any) -> Any:
            if getattr(args, "authorize_only", False):
                # Only the authority check: the workflow claims and asks after it passes.
                if authorize is not None:
                    await authorize(args, self.context(args))
                return {"authorized": True}
            arguments = (args, self.context(args)) if takes_context else (args,)
            if side_effect:
                async with heartbeating(SIDE_EFFECT_HEARTBEAT_EVERY_S):
                    return await fn(*arguments)
            return await fn(*arguments)

        call.__name__ = call.__qualname__ = spec.name
        call.__doc__ = spec.description
        # Temporal decodes the payload by these: the tool's own input and result models.
        call.__annotations__ = {"args": spec.activity_input_model, "return": spec.result_model}
        return activity.defn(name=spec.name)(call)

    def _many(self, spec: ToolSpec) -> Many:
        many = spec.many
        assert many is not None

        async def one_tenant(calls: list[tuple[int, ToolCall[Any]]]) -> list[Any]:
            try:
                results = list(await many([call for _, call in calls]))
            except Exception as exc:  # this tenant's request failed: its calls, no others
                return [exc] * len(calls)
            if len(results) != len(calls):
                error = RuntimeError(f"{spec.name}: {len(results)} results for {len(calls)} calls")
                return [error] * len(calls)
            return results

        async def serve(calls: Sequence[Any]) -> Sequence[Any]:
            # Each call checked on its own: a bad one fails alone, the others still go.
            results: list[Any] = [None] * len(calls)
            by_tenant: dict[str, list[tuple[int, ToolCall[Any]]]] = {}
            for index, args in enumerate(calls):
                try:
                    checked = checked_arguments(spec, args)
                except ApplicationError as exc:
                    results[index] = exc
                    continue
                ctx = self.context(checked)
                by_tenant.setdefault(ctx.tenant, []).append((index, ToolCall(checked, ctx)))
            # A merged request never mixes tenants: each tenant's calls go as one of its own.
            groups = list(by_tenant.values())
            answers = await asyncio.gather(*(one_tenant(group) for group in groups))
            for group, answer in zip(groups, answers, strict=True):
                for (index, _), result in zip(group, answer, strict=True):
                    results[index] = result
            return results

        return serve
