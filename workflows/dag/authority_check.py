"""A side effect's authority, checked before anything is claimed or asked.

A tool may declare `authorize` (`agentkeel.tool`): the checks it makes of the actor's
authority over the row (its owner, its tenant), without changing anything. The workflow
runs them as the tool's own activity, marked `authorize_only`, before the effect is claimed
in the ledger or put to an approver: a customer's claim on another's order is refused
there, and never counts against that order, nor waits for a person to decide on it.
"""

from __future__ import annotations

from typing import Any

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError

from agentkeel.schemas import errors
from agentkeel.schemas.actor import Actor, role_refusal_reason
from agentkeel.schemas.result import StepError
from agentkeel.schemas.tools import ToolSpec
from agentkeel.workflows.dag.calls import ToolCall
from agentkeel.workflows.release import since

ROLES_PATCH = "roles-before-claim-v1"
"""Runs started before it left a tool's `roles` to the call: a role it refuses was claimed
in the ledger and put to an approver first."""
ROLES_IN_CLAIM_PATCH = "roles-in-claim-v1"
"""Runs started before it read a tool's `roles` in workflow code, from the catalog of the
worker that replays them: a catalog widened or narrowed since then replays differently.
Now the claim's local activity decides it, and its result is in the history."""
AUTHORIZE_PATCH = "authorize-before-claim-v1"
"""Runs started before it claimed first; the tool checked its authority when it ran."""

REFUSED_BY_AUTHORITY = (errors.NOT_AUTHORIZED, errors.NOT_FOUND)


def role_refusal(spec: ToolSpec, actor: Actor) -> StepError | None:
    """`NotAuthorized` where the tool's `roles` leave out the actor's: how runs started
    before `ROLES_IN_CLAIM_PATCH` decided it, in workflow code, from the catalog of the
    worker replaying them (kept for their replay)."""
    message = role_refusal_reason(spec.name, spec.roles, actor)
    if message is None or not since(ROLES_PATCH):
        return None
    return refused_by_role(message)


def refused_by_role(message: str) -> StepError:
    return StepError(type=errors.NOT_AUTHORIZED, message=message, non_retryable=True)


async def authority_refusal(
    call: ToolCall, spec: ToolSpec, payload: dict[str, Any], key: str, task_queue: str
) -> StepError | None:
    """Why the actor may not make this effect (`NotAuthorized`, `NotFound`), or None when
    the tool's own check passes or it declares none. Other failures of the check fail the
    step as a failed call would."""
    if spec.authorize is None or not since(AUTHORIZE_PATCH):
        return None
    checked = {**payload, "idempotency_key": key, "authorize_only": True}
    try:
        await workflow.execute_activity(
            spec.name,
            checked,
            task_queue=task_queue,
            start_to_close_timeout=spec.timeout,
            retry_policy=RetryPolicy(
                maximum_attempts=spec.max_attempts,
                non_retryable_error_types=list(spec.non_retryable_errors),
            ),
            summary=f"authorize {call.tool} {call.call_id}",
        )
    except ActivityError as failure:
        cause = failure.cause
        if isinstance(cause, ApplicationError) and cause.type in REFUSED_BY_AUTHORITY:
            return StepError(type=cause.type, message=cause.message, non_retryable=True)
        raise
    return None
