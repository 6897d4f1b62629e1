"""Planning beside the router: the heavy planner starts with the route, not after it.

An unsure route costs two model stages in a row (route, then plan). Where the router has
lately been unsure for a tenant, the route activity starts the planner at once, on the
question alone, and cancels it if the router turns out confident: the run then pays
max(route, plan) instead of route + plan, and one activity round trip instead of two.
The price is a plan started in vain for a confident request of such a tenant; the
forecast keeps that rare (it plans ahead only while most recent routes were unsure).
"""

from __future__ import annotations

from collections import deque
from typing import Literal

from agentkeel.inference.llm.cascade import count_override
from agentkeel.schemas.route import STAND_IN_INTENT, ConfidenceBasis, Route, Tier

PlanAhead = Literal["auto", "always", "off"]
"""`auto`: plan ahead for a tenant whose recent routes were mostly unsure; `always`;
`off`: plan only after an unsure route."""

AHEAD_ROUTE = Route(
    intent=STAND_IN_INTENT,
    confidence=0.0,
    basis=ConfidenceBasis.UNMEASURED,
    tier=Tier.HEAVY,
    reason="planned beside the router, from the request alone",
)
"""What the planner is told of the route when it starts before the router answers: it
reads the request itself (as the heavy tier always does). Its own route is then told
against the router's (`beside`), as if it had planned after it."""


def beside(router: Route, planned: Route) -> Route:
    """The route of a plan made beside `router`: the planner's own reading and tier, the
    router's intent, confidence and basis as the router measured them (not the stand-in
    the planner was given), and an override only where the two readings differ."""
    overridden = router.intent if planned.intent != router.intent else None
    reason = f"planned {planned.intent} beside the router"
    if router.reason:  # the router's own account first, as after a plan made after it
        reason = f"{router.reason}; {reason}"
    if overridden is not None:
        reason += f", overriding the router's {overridden} ({router.confidence_told})"
        count_override(overridden, planned.intent)
    return planned.model_copy(
        update={
            "confidence": router.confidence,
            "basis": router.basis,
            "router_intent": router.intent,
            "overridden_intent": overridden,
            "reason": reason,
        }
    )


class UnsureForecast:
    """Whether the next route of a tenant is likely to be unsure, from its last routes."""

    def __init__(
        self,
        mode: PlanAhead = "auto",
        *,
        above: float = 0.5,
        window: int = 20,
        tenants: int = 1024,
    ) -> None:
        self.mode = mode
        self.above = above
        self._window = window
        self._tenants = tenants
        self._recent: dict[str, deque[bool]] = {}

    def expects_unsure(self, tenant: str) -> bool:
        if self.mode != "auto":
            return self.mode == "always"
        recent = self._recent.get(tenant)
        if not recent or len(recent) < min(3, self._window):
            return False  # too little seen: plan after the route, as without a forecast
        return sum(recent) / len(recent) > self.above

    def observe(self, tenant: str, unsure: bool) -> None:
        recent = self._recent.get(tenant)
        if recent is None:
            if len(self._recent) >= self._tenants:  # bounded: the oldest tenant goes
                self._recent.pop(next(iter(self._recent)))
            recent = self._recent[tenant] = deque(maxlen=self._window)
        recent.append(unsure)
