"""The public request contract of `AgentWorkflow` (JSON on the wire)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, field_validator

MAX_QUESTION_CHARS = 4000


class RunOptions(BaseModel):
    """Per-request knobs; every field has a default so old clients keep working."""

    model_config = ConfigDict(extra="forbid")

    use_cache: bool = True
    """Look up and store the path cache for this run."""
    refresh_cache: bool = False
    """Skip the lookup but store the result: how the cache warmer renews hot entries."""
    read_only: bool = False
    """Reject any plan with a side-effecting tool (the cache warmer's runs never move money)."""
    max_concurrency: int = Field(default=5, ge=1, le=64)
    """Most tool activities of this run in flight at once."""
    max_replans: int = Field(default=2, ge=0, le=5)
    """How often `join` may send the run back to planning."""


class AgentRequest(BaseModel):
    """Input of `AgentWorkflow`. Only `question` is required; unknown fields are rejected."""

    model_config = ConfigDict(extra="forbid")

    question: str = Field(min_length=1, max_length=MAX_QUESTION_CHARS)
    conversation_id: str | None = None
    tenant: str = "default"
    options: RunOptions = Field(default_factory=RunOptions)

    @field_validator("question")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("question must not be blank")
        return value
