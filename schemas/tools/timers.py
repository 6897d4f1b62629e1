"""The built-in `wait` step: a durable timer in the workflow, no activity, no downstream."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import AwareDatetime, BaseModel, Field, model_validator

from agentkeel.schemas.plan.model import MAX_WATCH_S
from agentkeel.schemas.tools.spec import ToolArgs, ToolSpec


class WaitArgs(ToolArgs):
    """`{"seconds": 7200}` or `{"until": "2026-12-02T09:00:00Z"}`: exactly one."""

    seconds: float | None = Field(default=None, ge=0, le=MAX_WATCH_S)
    until: AwareDatetime | None = None
    """A moment with its time zone; one already past waits not at all."""

    @model_validator(mode="after")
    def _one_of(self) -> WaitArgs:
        if (self.seconds is None) == (self.until is None):
            raise ValueError('wait takes exactly one of "seconds" and "until"')
        return self


class Waited(BaseModel):
    waited_until: datetime
    waited_s: float


def _waited(out: dict[str, Any]) -> str:
    return f"I waited until {out['waited_until']}."


WAIT = ToolSpec(
    name="wait",
    description=(
        "Wait, durably, for a number of seconds or until a moment (ISO time with zone) "
        "before the steps that come after it: for 'check again in 2 hours'."
    ),
    args_model=WaitArgs,
    result_model=Waited,
    expected_ms=0,
    runs_in_workflow=True,
    render=_waited,
)
