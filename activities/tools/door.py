"""The one door of every activity: only a run of agentkeel's own may call it.

A tool activity is registered on the task queue like any other, so Temporal would run it
for any caller: a standalone activity (`temporal activity execute`), another workflow
type on the same queue, a workflow started with a forged input. Each would skip the
workflow's gate (allowed effects, provenance, approval, idempotency keys, the record).
The door refuses them before the tool's code runs: a side effect only for an
`AgentWorkflow`, a read also for an `AgentFanOut` part (which its parent started, and
which never runs side effects).
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from temporalio import activity
from temporalio.exceptions import ApplicationError

from agentkeel.schemas.errors import CALLER_NOT_ALLOWED
from agentkeel.schemas.names import AGENT_WORKFLOW, CACHE_WARMER_WORKFLOW, FAN_OUT_WORKFLOW
from agentkeel.schemas.tools.spec import ToolSpec

R = TypeVar("R")

READ_CALLERS = frozenset({AGENT_WORKFLOW, FAN_OUT_WORKFLOW})
EFFECT_CALLERS = frozenset({AGENT_WORKFLOW})
RUN_CALLERS = frozenset({AGENT_WORKFLOW, FAN_OUT_WORKFLOW, CACHE_WARMER_WORKFLOW})
"""agentkeel's own workflows: the only callers of its internal activities (the run record,
the caches, the effects ledger, outputs)."""


def refusal(spec: ToolSpec, info: activity.Info) -> str | None:
    """Why the call `info` describes may not run `spec`, or None."""
    return caller_refusal(spec.name, READ_CALLERS if spec.idempotent else EFFECT_CALLERS, info)


def caller_refusal(name: str, allowed: frozenset[str], info: activity.Info) -> str | None:
    """Why activity `name` may not run for the caller `info` describes, or None."""
    if not info.in_workflow:
        return f"{name} runs only inside an agent run, not as a standalone activity"
    if info.workflow_type not in allowed:
        return (
            f"{name} may not be called by a {info.workflow_type} workflow "
            f"(only {', '.join(sorted(allowed))})"
        )
    return None


def door_tool(method: Callable[[Any], Awaitable[R]], spec: ToolSpec) -> Any:
    """The tool activity `method`, refusing (non-retryably) a caller that is not a run."""

    @functools.wraps(method, updated=())  # not __dict__: it holds the activity definition
    async def run(args: Any) -> R:
        why = refusal(spec, activity.info())
        if why is not None:
            activity.logger.warning("tool call refused: %s", why)
            raise ApplicationError(why, type=CALLER_NOT_ALLOWED, non_retryable=True)
        return await method(args)

    return activity.defn(name=spec.name)(run)


def door_activity(method: Callable[..., Any], allowed: frozenset[str] = RUN_CALLERS) -> Any:
    """An internal activity `method` (the run record, the ledger...), refusing (non-retryably)
    any caller but agentkeel's own workflows: registered on the task queue, it would
    otherwise write a forged record or settle another run's claim for anyone."""
    definition = activity._Definition.must_from_callable(method)
    name = definition.name
    # (A dynamic activity has no name, a sync one would need a thread: agentkeel has neither.)
    assert name is not None and inspect.iscoroutinefunction(method), name

    @functools.wraps(method, updated=())
    async def run(*args: Any) -> Any:
        why = caller_refusal(name, allowed, activity.info())
        if why is not None:
            activity.logger.warning("activity call refused: %s", why)
            raise ApplicationError(why, type=CALLER_NOT_ALLOWED, non_retryable=True)
        return await method(*args)

    return activity.defn(name=name)(run)
