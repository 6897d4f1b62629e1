"""The settings that give a run a head start: speculative reads from the run's first moment,
fast reads as local activities, planning beside the router, and reads started as the
planner writes them.

A base of `settings.model.Settings` (each field is `AGENTKEEL_<FIELD>`), kept apart because
each trades a little work that may be wasted for a run that ends sooner; with what the
workers make of them (`speculative_calls`; the forecast is `workers.policy_offers.unsure_forecast`).
"""

from __future__ import annotations

from pydantic import BaseModel

from agentkeel.schemas.choices import PlanAhead, PlanAheadUnseen
from agentkeel.settings.types import MODEL_CONFIG, Fraction, NotNegative, OnOff

__all__ = ["HeadStartSettings", "speculative_calls"]


class HeadStartSettings(BaseModel):
    """Speculation, local tools and planning ahead."""

    model_config = MODEL_CONFIG

    speculation: OnOff = "on"
    """`on`: a run starts the cached, idempotent reads its question predicts (an id or an
    email the domain's entity patterns find) at its first moment, beside the router and
    the planner, and its plan adopts them; `off`."""
    speculation_max_calls: NotNegative = 4
    """Most reads one run starts speculatively (at most 8, whatever is set here)."""
    local_tools: OnOff = "on"
    """`on`: the CPU worker, which runs both the workflows and the tools, runs each run's
    fast reads (`ToolSpec.local_read`) as local activities, with no task-queue round trip;
    `off`: every tool call goes through the task queue (workers that run workflows but
    not tools must say `off`)."""
    plan_ahead: PlanAhead = "auto"
    """When the planner starts beside the router instead of after it (one model stage
    less for an unsure route): `auto`, for a tenant whose recent routes were mostly
    unsure (above `AGENTKEEL_PLAN_AHEAD_ABOVE`); `always`; `off`."""
    plan_stream: OnOff = "on"
    """`on`: the inference worker signals a run each step its planner writes that is a
    cached, idempotent read needing no other step's output, 20 ms after the step is
    written, and the run starts it before the plan is whole (side effects still wait for
    the whole plan and its checks); a planner whose plans come whole within those 20 ms
    is read whole (`inference.llm.stream_pace`); `off`: every step waits for the whole
    plan."""
    plan_ahead_above: Fraction = 0.5
    """The share of a tenant's last 20 routes that were unsure above which `auto` plans
    ahead (of its deployment's last 20, every tenant's, for a tenant with fewer than 3)."""
    plan_ahead_unseen: PlanAheadUnseen = "ahead"
    """What `auto` does where neither the tenant nor its deployment has 3 routes to go by
    (a new deployment, or one quiet for a week): `ahead`, plan beside the router, for at
    most 3 routes at a time per worker (a planner cancelled where the route is sure is
    counted in usage); `after`, route, then plan."""


def speculative_calls(settings: HeadStartSettings) -> int:
    """How many reads a run may speculate by `AGENTKEEL_SPECULATION*` (0: off)."""
    return settings.speculation_max_calls if settings.speculation == "on" else 0
