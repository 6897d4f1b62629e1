"""The settings of approvals: which side effects wait for a person, and for how long.

A base of `settings.model.Settings` (each field is `AGENTKEEL_<FIELD>`), kept apart because
they are the business's limits on money moved without a person, not the machinery's.
"""

from __future__ import annotations

from pydantic import BaseModel

from agentkeel.settings.types import ENV_PREFIX, MODEL_CONFIG, Duration, NotNegative, parse_duration

__all__ = ["ApprovalSettings"]


class ApprovalSettings(BaseModel):
    """The amounts above which a side effect waits for a staff decision, and the wait."""

    model_config = MODEL_CONFIG

    approval_threshold_cents: NotNegative = 10_000
    """A side effect moving more than this (from any actor) waits for a staff approval."""
    self_service_cents: NotNegative = 2_000
    """A side effect a customer asks for, moving more than this, waits for approval."""
    approval_timeout: Duration = "24h"
    """How long a run waits for a decision before it declines the side effect: seconds, or
    a number with `s`, `m`, `h` or `d`."""

    @property
    def approval_timeout_s(self) -> float:
        return parse_duration(self.approval_timeout, ENV_PREFIX + "APPROVAL_TIMEOUT")
