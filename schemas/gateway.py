"""The HTTP gateway's public contract (JSON on the wire, `GET /openapi.json`).

The gateway is a thin door onto `AgentWorkflow`: it holds no run state, so every field
here is read from Temporal (status, the `progress` query, the result) or Redis (the token
stream) when asked. Event names of `GET /v1/runs/{id}/events` are `RunEventType`.
"""

from __future__ import annotations

from enum import StrEnum

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


class Problem(BaseModel):
    """Body of every 4xx/5xx answer other than FastAPI's own 422."""

    detail: str


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

    quota: QuotaKind
    scope: QuotaScope
    limit: int
    """The most this scope may hold at once."""
    retry_after_s: int
    """When to try again, as `Retry-After` says: a slot may have freed by then."""
