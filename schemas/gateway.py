"""The HTTP gateway's public contract (JSON on the wire, `GET /openapi.json`).

The gateway is a thin door onto `AgentWorkflow`: it holds no run state, so every field
here is read from Temporal (status, the `progress` query, the result) or Redis (the token
stream) when asked. Event names of `GET /v1/runs/{id}/events` are `RunEventType`.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from agentkeel.schemas.progress import RunProgress
from agentkeel.schemas.result import AgentResult
from agentkeel.schemas.text import FreeText, SafeName


class RunState(StrEnum):
    """Temporal's execution status, in lower case; `answered` is a cache fast-path answer
    given without a run."""

    RUNNING = "running"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELED = "canceled"
    TERMINATED = "terminated"
    TIMED_OUT = "timed_out"
    CONTINUED_AS_NEW = "continued_as_new"
    ANSWERED = "answered"


class RunView(BaseModel):
    """A run as the gateway sees it now."""

    workflow_id: str
    """Empty for an answer served from the cache without a run."""
    run_id: str
    state: RunState
    progress: RunProgress | None = None
    """While running: stage, steps, approvals, waits (the `progress` query)."""
    result: AgentResult | None = None
    """Once completed (or answered from the cache)."""
    error: str | None = None
    """Why the run did not complete (failed, canceled, terminated, timed out)."""


class RunEventType(StrEnum):
    PROGRESS = "progress"
    """Data: `RunProgress`, sent whenever the stage, a step or an approval changes."""
    TOKEN = "token"
    """Data: `{"text", "attempt"}`, the answer's next piece."""
    RESET = "reset"
    """Data: `{"attempt"}`: a retried answer begins; drop the text shown so far."""
    RESULT = "result"
    """Data: `AgentResult`; the last event."""
    ERROR = "error"
    """Data: `{"state", "message"}`; the last event."""


class GatewayApproval(BaseModel):
    """Body of `POST /v1/runs/{id}/approve`."""

    model_config = ConfigDict(extra="forbid")

    approved: bool
    reason: FreeText = Field(default="", max_length=1000)
    approval_id: int | None = None
    """Required: the approval decided, as the approver saw it (`progress.awaiting.approval_id`
    of `GET /v1/runs/{id}`). A body without it is refused (`ApprovalIdRequired`, 422), one
    for another, a decided or an unknown approval too (409)."""
    approver: SafeName | None = None
    """Who decides. With API keys it is the key's actor; only a key that may act for others
    (or the keyless loopback gateway) names someone else."""


PROBLEM_MEDIA_TYPE = "application/problem+json"
"""The media type of every error answer (RFC 9457)."""

PROBLEM_TYPES: dict[str, tuple[str, str]] = {
    "bad-request": (
        "Bad request",
        "A parameter is out of its range.",
    ),
    "unauthenticated": (
        "No valid API key",
        "Send `Authorization: Bearer <key>` with a key the gateway knows.",
    ),
    "forbidden": (
        "Not allowed",
        "The API key may not do this: another tenant, actor or role.",
    ),
    "browser-refused": (
        "Refused a web page's request",
        "A gateway without API keys answers no web page but its own.",
    ),
    "not-found": (
        "Not found",
        "No route serves this path.",
    ),
    "run-not-found": (
        "No such run",
        "No run of this id, or none the API key may see.",
    ),
    "method-not-allowed": (
        "Method not allowed",
        "The path is served, not with this method (see `Allow`).",
    ),
    "conflict": (
        "Conflicts with the run's state",
        "The run cannot do this now (nothing awaits a decision, or it refused it).",
    ),
    "run-ended": (
        "The run has ended",
        "The run is no longer running.",
    ),
    "approval-id-required": (
        "Name the approval",
        "A decision must name the approval it decides (`approval_id`, from `progress.awaiting`).",
    ),
    "no-approval-pending": (
        "Nothing awaits a decision",
        "The run waits for no approval now.",
    ),
    "approval-not-pending": (
        "Not the approval that waits",
        "The decision names another approval than the one the run waits for.",
    ),
    "unknown-approval": (
        "No such approval",
        "The run never asked for an approval of this id.",
    ),
    "approval-already-decided": (
        "Already decided",
        "The approval has its decision already (or ran out of time, or its wait was cancelled).",
    ),
    "approver-not-allowed": (
        "Not an approver of this effect",
        "The run's approval policy does not let this approver decide it.",
    ),
    "body-too-large": (
        "Request body too large",
        "A request body is at most 64 KiB.",
    ),
    "unsupported-media-type": (
        "Unsupported media type",
        "A request body must be application/json.",
    ),
    "misdirected-request": (
        "Not served for this host",
        "A gateway without API keys answers loopback names only.",
    ),
    "invalid-request": (
        "Invalid request",
        "The request does not match its schema; `errors` lists where.",
    ),
    "quota-full": (
        "Quota full",
        "A quota of runs, watches or streams is full; try again after `Retry-After`.",
    ),
    "budget-exhausted": (
        "Model budget spent",
        "The key's or tenant's model budget (tokens or cost) for this window is spent; "
        "try again after `Retry-After`, when the window ends.",
    ),
    "quotas-unavailable": (
        "Quotas are unavailable",
        "The Redis that keeps the quotas did not answer, so a run could not be counted; "
        "nothing was started. Try again after `Retry-After`.",
    ),
    "temporal-unavailable": (
        "Temporal is unavailable",
        "The gateway cannot reach the Temporal service.",
    ),
    "unavailable": (
        "Unavailable",
        "A service the gateway needs is unavailable.",
    ),
    "internal-error": (
        "Internal error",
        "The gateway failed; its log says why.",
    ),
}
"""Each error's stable `type` name (the URI is `/problems/<name>`): its title and meaning."""


def problem_type(name: str) -> str:
    """The `type` URI of the problem `name` (a key of `PROBLEM_TYPES`)."""
    return f"/problems/{name}"


class Problem(BaseModel):
    """RFC 9457 problem details: the body of every 4xx and 5xx answer
    (`application/problem+json`)."""

    type: str
    """The kind of error, stable (`/problems/<name>`, relative to the gateway, which serves
    a description there): what a client branches on."""
    title: str
    """The kind's summary; the same for every occurrence."""
    status: int
    """The HTTP status of this answer."""
    detail: str
    """What went wrong this time, for a person."""
    instance: str | None = None


class ValidationProblem(Problem):
    """Body of a `422`: the request does not match its schema."""

    errors: list[dict[str, Any]]
    """Each mismatch: `loc` (where, e.g. `["body", "question"]`), `msg`, `type`."""


class QuotaKind(StrEnum):
    """What a gateway quota counts (`AGENTKEEL_GATEWAY_<KIND>_PER_KEY` / `_PER_TENANT`)."""

    RUNS = "runs"
    """Runs in flight, started through the gateway and not yet ended."""
    WATCHES = "watches"
    """Runs in flight that watch (`options.watch_every_s`): they may last for days."""
    STREAMS = "streams"
    """Open `GET /v1/runs/{id}/events` streams."""


class QuotaScope(StrEnum):
    KEY = "key"
    """One API key (without keys: every caller of the loopback gateway together)."""
    TENANT = "tenant"
    """Every key of one tenant, together."""


class QuotaProblem(Problem):
    """Body of a `429`: a quota is full. Sent with `Retry-After` (seconds)."""

    type: str = problem_type("quota-full")
    title: str = PROBLEM_TYPES["quota-full"][0]
    status: int = 429

    quota: QuotaKind
    scope: QuotaScope
    limit: int
    """The most this scope may hold at once."""
    retry_after_s: int
    """When to try again, as `Retry-After` says: a slot may have freed by then."""


class BudgetProblem(Problem):
    """Body of a `429`: the model budget of the caller's key or tenant for this window is
    spent (`AGENTKEEL_BUDGET_*`). Sent with `Retry-After` (seconds to the window's end)."""

    type: str = problem_type("budget-exhausted")
    title: str = PROBLEM_TYPES["budget-exhausted"][0]
    status: int = 429

    scope: QuotaScope
    spent: str
    """What the scope has used in this window (`1234 tokens`, `$0.012000`)."""
    limit: str
    """Its budget per window, in the same unit."""
    window_s: int
    retry_after_s: int
    """When the window ends, as `Retry-After` says."""
