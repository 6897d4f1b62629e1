"""One tool call as a Temporal activity: the options every tool call of a run shares."""

from __future__ import annotations

from typing import Any

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError, CancelledError, TimeoutError

from agentkeel.schemas import errors
from agentkeel.schemas.approvals import ApprovalRecord
from agentkeel.schemas.result import StepError
from agentkeel.schemas.tools import ToolSpec
from agentkeel.workflows import timeouts
from agentkeel.workflows.dag.calls import ToolCall
from agentkeel.workflows.release import since

_SUMMARY_CHARS = 120

TOOL_TENANT_PATCH = "tool-tenant-v1"
"""Tool calls carry the request's tenant beside the actor (`ActorScoped.tenant`); calls of
runs recorded before it are replayed as they were scheduled, without one."""


def with_tenant(payload: dict[str, Any], tenant: str) -> dict[str, Any]:
    """A tool call's activity input with the run's tenant, which a plan can never set."""
    if since(TOOL_TENANT_PATCH):
        return {**payload, "tenant": tenant}
    return payload


class LocalToolFailed(Exception):
    """A tool run as a local activity failed. Its error comes unwrapped (an
    `ApplicationError` or `TimeoutError`, where a task-queue activity's comes inside an
    `ActivityError`): wrapped here, so it fails its step as any tool's failure does,
    while the same error raised by workflow code still ends the run."""

    def __init__(self, failure: ApplicationError | TimeoutError) -> None:
        super().__init__(str(failure))
        self.failure = failure


class StepRefused(Exception):
    """A call the run itself declined to make (a side effect without approval)."""

    def __init__(self, error: StepError, *, approval: ApprovalRecord | None = None) -> None:
        super().__init__(error.message)
        self.error = error
        self.approval = approval
        """The decision that declined it, where an approver (or the deadline) did."""


async def execute_tool(
    spec: ToolSpec,
    payload: dict[str, Any],
    task_queue: str,
    summary: str,
    *,
    local: bool = False,
    max_attempts: int | None = None,
    **options: Any,
) -> Any:
    """One tool activity, retried as its catalog entry says (at most `max_attempts` times
    where given); its result as JSON.

    `local`: a local activity of this worker (a fast read, `ToolSpec.local_read`): no
    task-queue round trip, recorded in history as a marker all the same."""
    retry = RetryPolicy(
        maximum_attempts=max_attempts or spec.max_attempts,
        non_retryable_error_types=list(spec.non_retryable_errors),
    )
    if local:
        try:
            answered = await workflow.execute_local_activity(
                spec.name,
                payload,
                result_type=spec.result_model,
                start_to_close_timeout=spec.timeout,
                retry_policy=retry,
                summary=summary,
                **options,
            )
        except (ApplicationError, TimeoutError) as failure:
            raise LocalToolFailed(failure) from failure
        return answered.model_dump(mode="json")
    result = await workflow.execute_activity(
        spec.name,
        payload,
        result_type=spec.result_model,
        task_queue=task_queue,
        start_to_close_timeout=spec.timeout,
        heartbeat_timeout=timeouts.TOOL_HEARTBEAT,
        retry_policy=retry,
        summary=summary,
        **options,
    )
    return result.model_dump(mode="json")


def summary_of(call: ToolCall) -> str:
    args = ", ".join(f"{k}={v!r}" for k, v in call.args.items())
    text = f"{call.call_id}: {call.tool}({args})"
    return text if len(text) <= _SUMMARY_CHARS else text[: _SUMMARY_CHARS - 1] + "…"


def describe_error(error: BaseException) -> StepError:
    """The root cause of a failed tool call, as the run result reports it."""
    if isinstance(error, StepRefused):
        return error.error
    if isinstance(error, LocalToolFailed):
        error = error.failure
    cause = error.cause if isinstance(error, ActivityError) and error.cause else error
    if isinstance(cause, ApplicationError):
        return StepError(
            type=cause.type or errors.APPLICATION_ERROR,
            message=cause.message,
            non_retryable=cause.non_retryable,
        )
    if isinstance(cause, CancelledError):
        return StepError(
            type=errors.CANCELLED, message="cancelled with the run", non_retryable=True
        )
    if isinstance(cause, TimeoutError):
        return StepError(
            type=errors.TIMEOUT, message=f"{cause.type.name if cause.type else ''} timeout"
        )
    return StepError(type=type(cause).__name__, message=str(cause))
