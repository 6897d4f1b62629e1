"""The one door of every tool activity: only a run of agentkeel's own may call it.

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
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from temporalio import activity
from temporalio.exceptions import ApplicationError

from agentkeel.schemas.errors import CALLER_NOT_ALLOWED
from agentkeel.schemas.names import AGENT_WORKFLOW, FAN_OUT_WORKFLOW
from agentkeel.schemas.tools.spec import ToolSpec

R = TypeVar("R")

READ_CALLERS = frozenset({AGENT_WORKFLOW, FAN_OUT_WORKFLOW})
EFFECT_CALLERS = frozenset({AGENT_WORKFLOW})


def refusal(spec: ToolSpec, info: activity.Info) -> str | None:
    """Why the call `info` describes may not run `spec`, or None."""
    allowed = READ_CALLERS if spec.idempotent else EFFECT_CALLERS
    if not info.in_workflow:
        return f"{spec.name} runs only inside an agent run, not as a standalone activity"
    if info.workflow_type not in allowed:
        return (
            f"{spec.name} may not be called by a {info.workflow_type} workflow "
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
