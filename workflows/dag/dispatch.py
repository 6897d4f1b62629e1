"""The `execute` node's engine: validates a plan and runs it as tool activities."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError, TimeoutError

from schemas import errors
from schemas.plan.model import Plan
from schemas.plan.validation import PlanValidationError
from schemas.result import StepError, StepOutcome
from schemas.tools import TOOLS
from workflows.dag.scheduler import DagScheduler, SchedulerLimits, ToolCall

_SUMMARY_CHARS = 120


async def run_plan(
    plan: Plan,
    *,
    tool_queue: str,
    max_concurrency: int,
    attempt: int,
    read_only: bool = False,
    on_start: Callable[[list[StepOutcome]], None] | None = None,
) -> tuple[list[StepOutcome], StepError | None]:
    """Outcomes of every step, or no outcomes and the reason the plan was rejected."""
    if read_only:
        effects = [s.id for s in plan.steps if s.tool in TOOLS and not TOOLS[s.tool].idempotent]
        if effects:
            message = f"steps {', '.join(effects)} have side effects; this run is read-only"
            return [], StepError(
                type=errors.SIDE_EFFECT_NOT_ALLOWED, message=message, non_retryable=True
            )
    try:
        scheduler = DagScheduler(
            plan,
            TOOLS,
            dispatch=lambda call: _dispatch(call, tool_queue),
            now=workflow.now,
            describe_error=describe_error,
            limits=SchedulerLimits(max_concurrency=max_concurrency),
            attempt=attempt,
            step_failures=(ActivityError,),
        )
    except PlanValidationError as exc:
        workflow.logger.info("plan rejected: %s %s", exc.kind, exc.message)
        return [], StepError(type=exc.kind, message=exc.message, non_retryable=True)
    if on_start is not None:
        on_start(list(scheduler.outcomes.values()))
    return await scheduler.run(), None


async def _dispatch(call: ToolCall, tool_queue: str) -> Any:
    spec = TOOLS[call.tool]
    payload = dict(call.args)
    if not spec.idempotent:
        payload["idempotency_key"] = idempotency_key(
            workflow.info().first_execution_run_id, call.call_id
        )
    result = await workflow.execute_activity(
        spec.name,
        payload,
        result_type=spec.result_model,
        task_queue=tool_queue,
        start_to_close_timeout=spec.timeout,
        retry_policy=RetryPolicy(
            maximum_attempts=spec.max_attempts,
            non_retryable_error_types=list(spec.non_retryable_errors),
        ),
        summary=_summary(call),
    )
    return result.model_dump(mode="json")


def idempotency_key(first_run_id: str, call_id: str) -> str:
    """The key a side-effecting tool enforces: the same for every retry of one call.

    It names the run chain (the first run id survives retries, continue-as-new and reset)
    and the call, not the workflow id: with coalescing, workflow ids are derived from the
    question, and the same question asked again tomorrow must refund again.
    """
    return f"{first_run_id}/{call_id}"


def _summary(call: ToolCall) -> str:
    args = ", ".join(f"{k}={v!r}" for k, v in call.args.items())
    text = f"{call.call_id}: {call.tool}({args})"
    return text if len(text) <= _SUMMARY_CHARS else text[: _SUMMARY_CHARS - 1] + "…"


def describe_error(error: BaseException) -> StepError:
    """The root cause of a failed tool call, as the run result reports it."""
    cause = error.cause if isinstance(error, ActivityError) and error.cause else error
    if isinstance(cause, ApplicationError):
        return StepError(
            type=cause.type or errors.APPLICATION_ERROR,
            message=cause.message,
            non_retryable=cause.non_retryable,
        )
    if isinstance(cause, TimeoutError):
        return StepError(
            type=errors.TIMEOUT, message=f"{cause.type.name if cause.type else ''} timeout"
        )
    return StepError(type=type(cause).__name__, message=str(cause))
