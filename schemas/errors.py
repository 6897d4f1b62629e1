"""Error type names: the `type` of an `ApplicationError`, a `StepError` or a plan error.

Callers match on these (retry policies list the non-retryable ones, results report
them), so each is defined once here and used wherever it is raised or checked.
"""

from __future__ import annotations

from typing import Final

# Requests.
INVALID_REQUEST: Final = "InvalidRequest"
"""The workflow input failed validation: the run fails at once, never retried."""

# Plans (the scheduler rejects the plan before any tool runs; `join` may replan).
UNKNOWN_TOOL: Final = "UnknownTool"
INVALID_ARGUMENTS: Final = "InvalidArguments"
MISSING_REFERENCE: Final = "MissingReference"
DEPENDENCY_CYCLE: Final = "DependencyCycle"
DUPLICATE_STEP: Final = "DuplicateStep"
EMPTY_PLAN: Final = "EmptyPlan"
PLAN_ERROR_KINDS: Final = (
    UNKNOWN_TOOL,
    INVALID_ARGUMENTS,
    MISSING_REFERENCE,
    DEPENDENCY_CYCLE,
    DUPLICATE_STEP,
    EMPTY_PLAN,
)
SIDE_EFFECT_NOT_ALLOWED: Final = "SideEffectNotAllowed"
"""A read-only run (the cache warmer's) was handed a plan with a side effect."""

# Steps.
DEPENDENCY_FAILED: Final = "DependencyFailed"
"""A step was skipped because a step it needs did not succeed."""
TIMEOUT: Final = "Timeout"
APPLICATION_ERROR: Final = "ApplicationError"
"""An application error raised without a type of its own."""

# Tools (raised by the tool activities, non-retryable).
NOT_FOUND: Final = "NotFound"
REFUND_REJECTED: Final = "RefundRejected"

# Models (raised by the inference activities for what a greedy retry would only repeat).
INVALID_MODEL_OUTPUT: Final = "InvalidModelOutput"
MODEL_REQUEST_REJECTED: Final = "ModelRequestRejected"
MODEL_ERRORS_NOT_RETRIED: Final = (INVALID_MODEL_OUTPUT, MODEL_REQUEST_REJECTED)
