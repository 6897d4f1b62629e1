"""Error type names: the `type` of an `ApplicationError`, a `StepError` or a plan error.

Callers match on these (retry policies list the non-retryable ones, results report
them), so each is defined once here and used wherever it is raised or checked.
"""

from __future__ import annotations

from typing import Final

from pydantic import ValidationError

# Requests.
INVALID_REQUEST: Final = "InvalidRequest"
"""The workflow input failed validation: the run fails at once, never retried."""
BUDGET_EXHAUSTED: Final = "BudgetExhausted"
"""A run spent its model budget (`options.budget`): it stops, non-retryable, with what it
did so far in the error's details; a front door refuses a new run for a key or tenant
whose window budget is spent (`AGENTKEEL_BUDGET_*`), the gateway with a `429`."""
UNDECODABLE_PAYLOAD: Final = "UndecodablePayload"
"""A payload that cannot be read at all (an unknown `encoding`, bytes that are not JSON,
JSON nested too deep): whatever carried it (a run's input, an update) fails at once, since
reading the same bytes again can never succeed (`schemas.payload_converter`)."""

# Plans (the scheduler rejects the plan before any tool runs; `join` may replan).
UNKNOWN_TOOL: Final = "UnknownTool"
INVALID_ARGUMENTS: Final = "InvalidArguments"
MISSING_REFERENCE: Final = "MissingReference"
DEPENDENCY_CYCLE: Final = "DependencyCycle"
DUPLICATE_STEP: Final = "DuplicateStep"
EMPTY_PLAN: Final = "EmptyPlan"
INVALID_CONDITION: Final = "InvalidCondition"
"""A step's `when` does not test an earlier step's output."""
INVALID_REPEAT: Final = "InvalidRepeat"
"""A step's `repeat` is on a tool that may not repeat, or its `until` does not test the
step's own output."""
PLAN_ERROR_KINDS: Final = (
    UNKNOWN_TOOL,
    INVALID_ARGUMENTS,
    MISSING_REFERENCE,
    DEPENDENCY_CYCLE,
    DUPLICATE_STEP,
    EMPTY_PLAN,
    INVALID_CONDITION,
    INVALID_REPEAT,
)
SIDE_EFFECT_NOT_ALLOWED: Final = "SideEffectNotAllowed"
"""A read-only run (the cache warmer's) was handed a plan with a side effect."""
SIDE_EFFECT_NOT_REQUESTED: Final = "SideEffectNotRequested"
"""The plan has a side effect the request did not ask for (by the router's reading of the
request itself, never of tool output)."""
CALLER_NOT_ALLOWED: Final = "CallerNotAllowed"
"""A tool activity called from outside an agent run (a standalone activity, another
workflow type): refused before the tool runs (`activities.tools.door`)."""
UNTRUSTED_ARGUMENT: Final = "UntrustedArgument"
"""A side effect's target or amount comes from untrusted content (tool output, a value only
the planner wrote), not from the request, its actor or a trusted lookup
(`schemas.plan.provenance`)."""
PLAN_TOO_LARGE: Final = "PlanTooLarge"
"""More steps than the run's `max_plan_steps`."""

# Steps.
DEPENDENCY_FAILED: Final = "DependencyFailed"
"""A step was skipped because a step it needs did not succeed."""
FAN_OUT_TOO_LARGE: Final = "FanOutTooLarge"
"""A `for_each` list longer than the run's `max_fan_out`."""
TOOL_CALL_LIMIT: Final = "ToolCallLimit"
"""The run has started `max_tool_calls` tool activities already."""
APPROVAL_DECLINED: Final = "ApprovalDeclined"
"""An approver rejected the side effect; it was not made."""
APPROVAL_TIMED_OUT: Final = "ApprovalTimedOut"
"""Nobody decided within the approval timeout; the side effect was declined."""
WATCH_TIMED_OUT: Final = "WatchTimedOut"
"""A repeated step's `until` never held before its `timeout_s`: the step ends `timed_out`."""
WATCH_QUOTA_FULL: Final = "WatchQuotaFull"
"""A watch asked for in words would be past its API key's or tenant's watch limit (the
gateway's `AGENTKEEL_GATEWAY_WATCHES_PER_*`): the step fails before its first wait."""
CANCELLED: Final = "Cancelled"
"""The step was in flight when its run was cancelled, and did not finish."""
RUN_ENDED: Final = "RunEnded"
"""The run ended (terminated, timed out) with a side effect's claim open: the claim sweep
ended it (`workers.claim_sweep`)."""
TIMEOUT: Final = "Timeout"
APPLICATION_ERROR: Final = "ApplicationError"
"""An application error raised without a type of its own."""

# Tools (raised by the tool activities, non-retryable).
NOT_FOUND: Final = "NotFound"
NOT_AUTHORIZED: Final = "NotAuthorized"
"""The run's actor may not read or change that row; the message names what was refused."""
MCP_TOOLS_CHANGING: Final = "McpToolsChanging"
"""The MCP server's tool list keeps changing: its tools' calls are not sent (and are tried
again a minute later) until it keeps one list, and the worker restarts onto it
(`activities.mcp.source`)."""
MCP_TOOL_ERROR: Final = "McpToolError"
"""An MCP server answered a tool call with `isError`: the tool ran and said it failed (a
retry would ask the same), so the step fails with the server's text (`activities.mcp`)."""
MCP_INVALID_RESULT: Final = "McpInvalidResult"
"""An MCP tool's `structuredContent` does not match the `outputSchema` it declared."""
MCP_UNAVAILABLE: Final = "McpUnavailable"
"""An MCP server could not be reached or its connection broke during the call: retried by
the tool's policy, on a fresh connection (a stdio server restarted, an HTTP session re-made)."""

# Updates the workflow refuses (the `approve` update's validator: never in history), each a
# non-retryable `ApplicationError` of its type: sending the same decision again cannot help.
NO_APPROVAL_PENDING: Final = "NoApprovalPending"
"""The run waits for no approval now."""
APPROVAL_ALREADY_DECIDED: Final = "ApprovalAlreadyDecided"
"""The approval the decision names has its decision already (or ran out of time, or its
wait was cancelled)."""
APPROVAL_NOT_PENDING: Final = "ApprovalNotPending"
"""The decision names an `approval_id` other than the pending one."""
APPROVAL_ID_REQUIRED: Final = "ApprovalIdRequired"
"""The decision names no approval (`approval_id`): it could land on a request its approver
never saw."""
UNKNOWN_APPROVAL: Final = "UnknownApproval"
"""The decision names an approval id the run never asked."""
APPROVER_NOT_ALLOWED: Final = "ApproverNotAllowed"
"""The approver may not decide: the requester itself, or a role that does not approve."""

DECISIONS_THAT_STAND: Final = (
    APPROVAL_DECLINED,
    APPROVAL_TIMED_OUT,
    NOT_AUTHORIZED,
    WATCH_QUOTA_FULL,
)
"""Step failures a replan must not try to get around: the run finishes with them."""

# Models (raised by the inference activities for what a greedy retry would only repeat).
INVALID_MODEL_OUTPUT: Final = "InvalidModelOutput"
MODEL_REQUEST_REJECTED: Final = "ModelRequestRejected"
MODEL_ERRORS_NOT_RETRIED: Final = (INVALID_MODEL_OUTPUT, MODEL_REQUEST_REJECTED)


def describe_validation(exc: ValidationError) -> str:
    """A pydantic error in one line naming every bad field (each path part cut to 64
    characters: a hostile key never makes the message huge)."""
    return "; ".join(
        f"{'.'.join(str(p)[:64] for p in e['loc']) or 'input'}: {e['msg']}" for e in exc.errors()
    )


NO_PLANNER: Final = "NoPlanner"
"""The served domain has no rules policy and no model is configured: only a request that
carries its own plan can run."""
