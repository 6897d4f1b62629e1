"""The rules policy as the fallback of a model-backed policy whose model server is down.

A model server that is restarting, or gone for a minute, would fail every run after three
attempts. Where the rules policy can serve a step (it routes, plans and answers the
catalog's intents without a model), the step is served by it at once, the result says so
in `warnings`, and a counter (`agentkeel.policy.fallbacks`) counts it. What the rules
cannot serve fails as before, with the engine's error.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TypeVar

import structlog
from opentelemetry import metrics

from inference.engines.protocol import EngineUnavailableError
from inference.policy import Policy, TokenSink
from inference.rules.policy import RulesPolicy
from schemas import model_calls as calls

log = structlog.get_logger(__name__)

_FALLBACKS = metrics.get_meter("agentkeel.policy").create_counter(
    "agentkeel.policy.fallbacks",
    description="Policy steps served by the rules because the model server was unavailable",
)

R = TypeVar("R", calls.RouteResult, calls.PlanResult, calls.JoinResult, calls.RespondResult)


class FallbackPolicy:
    """`primary`, with `rules` serving any step whose model server cannot be reached."""

    def __init__(self, primary: Policy, rules: RulesPolicy) -> None:
        self.primary = primary
        self.rules = rules
        self.name = primary.name
        self.fallbacks = 0

    async def route(self, request: calls.RouteInput) -> calls.RouteResult:
        rules = self.rules
        return await self._either(
            "route", self.primary.route(request), lambda: rules.route(request)
        )

    async def plan(self, request: calls.PlanInput) -> calls.PlanResult:
        rules = self.rules
        return await self._either("plan", self.primary.plan(request), lambda: rules.plan(request))

    async def join(self, request: calls.JoinInput) -> calls.JoinResult:
        rules = self.rules
        return await self._either("join", self.primary.join(request), lambda: rules.join(request))

    async def respond(
        self, request: calls.RespondInput, sink: TokenSink | None = None
    ) -> calls.RespondResult:
        primary, rules = self.primary.respond(request, sink), self.rules
        return await self._either("respond", primary, lambda: rules.respond(request, sink))

    async def _either(
        self, step: str, primary: Awaitable[R], rules: Callable[[], Awaitable[R]]
    ) -> R:
        try:
            return await primary
        except EngineUnavailableError as exc:
            try:
                served = await rules()
            except Exception:
                raise exc from None
            self.fallbacks += 1
            _FALLBACKS.add(1, {"step": step})
            log.warning("policy.fallback_to_rules", step=step, error=str(exc))
            served.warnings.append(
                f"the model server was unavailable ({exc}): "
                f"the {step} step was served by the rules policy"
            )
            return served
