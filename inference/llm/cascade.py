"""The router cascade: the light model answers what it is sure of, the heavy model the rest.

Route always runs on the light tier (a label and its probability: a few tokens). A
confident route comes with the light model's draft plan and skips planning; below the
threshold, or on "uncertain", the run is the heavy tier's: it plans, reading the intent
afresh (a different intent than the router's is an override), and replans, judges and
answers. A confident run stays on the light tier throughout.

Counters on the worker's metrics endpoint give the heavy share
(`agentkeel_router_decisions{tier}`, counted for every policy by the route activity) and the
overrides (`agentkeel_router_overrides`) per worker; the run records (`tier`,
`route_reason`) give them per run.
"""

from __future__ import annotations

from dataclasses import dataclass

from agentkeel.inference.metering import meter
from agentkeel.inference.policy import Policy, TokenSink
from agentkeel.schemas import metrics
from agentkeel.schemas import model_calls as calls
from agentkeel.schemas.route import STAND_IN_INTENT, Route, Tier


@dataclass
class CascadeStats:
    """Since the worker started; also exported as OpenTelemetry counters."""

    routes: int = 0
    escalated: int = 0
    overridden: int = 0

    @property
    def heavy_share(self) -> float:
        return self.escalated / self.routes if self.routes else 0.0


class CascadePolicy:
    """`Policy` that routes with `light` and plans with `heavy` below the threshold."""

    def __init__(self, light: Policy, heavy: Policy) -> None:
        self.light = light
        self.heavy = heavy
        self.name = f"cascade({light.name} -> {heavy.name})"
        self.stats = CascadeStats()

    async def route(self, request: calls.RouteInput) -> calls.RouteResult:
        routed = await self.light.route(request)
        self.stats.routes += 1
        if routed.confident:
            return routed
        self.stats.escalated += 1
        # From here the run is the heavy tier's: it plans, replans, judges and answers,
        # even if its first plan fails before it could re-read the intent.
        routed.route.tier = Tier.HEAVY
        routed.route.reason = f"escalated to the heavy model: {routed.route.reason}"
        return routed

    async def plan(self, request: calls.PlanInput) -> calls.PlanResult:
        planned = await self._tier(request.route).plan(request)
        # A planner started beside the router read no route: its override, if any, is
        # counted once the router's route is known (`activities.plan_ahead.beside`).
        first_reading = (
            request.route.router_intent is None and request.route.intent != STAND_IN_INTENT
        )
        if first_reading and planned.route is not None:
            if planned.route.overridden_intent is not None:
                self.stats.overridden += 1
                count_override(request.route.intent, planned.route.intent)
            planned.route.reason = f"{request.route.reason}; {planned.route.reason}"
        return planned

    async def join(self, request: calls.JoinInput) -> calls.JoinResult:
        return await self._tier(request.route).join(request)

    async def respond(
        self, request: calls.RespondInput, sink: TokenSink | None = None
    ) -> calls.RespondResult:
        return await self._tier(request.route).respond(request, sink)

    def _tier(self, route: Route | None) -> Policy:
        """The tier that planned this run also judges and answers it."""
        return self.heavy if route is not None and route.tier == Tier.HEAVY else self.light


def count_override(from_intent: str, to_intent: str) -> None:
    """One route whose intent the heavy model changed, in `agentkeel_router_overrides`."""
    overrides = meter().create_counter(
        metrics.ROUTER_OVERRIDES, "Routes whose intent the heavy model changed"
    )
    overrides.add(1, {"from": from_intent, "to": to_intent})
