"""The rules policy as the fallback of a model-backed policy whose model server is down.

A model server that is restarting, or gone for a minute, would fail every run after three
attempts. Where the rules policy can serve a step (it routes, plans and answers the
catalog's intents without a model), the step's second attempt is served by it, the result
says so in `warnings` (and is not cached), and a counter (`agentkeel_policy_fallbacks`)
counts it. What the rules cannot serve fails as before, with the engine's error; so does an
answer whose model text had begun streaming.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TypeVar

import structlog
from temporalio import activity

from agentkeel.inference.engines.protocol import EngineUnavailableError
from agentkeel.inference.metering import meter
from agentkeel.inference.policy import Policy, TokenSink
from agentkeel.schemas import metrics
from agentkeel.schemas import model_calls as calls

log = structlog.get_logger(__name__)

FALLBACK_FROM_ATTEMPT = 2
"""The attempt of a model activity from which an unavailable model server is stood in for:
the first attempt's failure is retried with the model (200 ms later, `workflows.timeouts`)."""

R = TypeVar("R", calls.RouteResult, calls.PlanResult, calls.JoinResult, calls.RespondResult)


class FallbackPolicy:
    """`primary`, with `rules` serving any step whose model server cannot be reached."""

    def __init__(self, primary: Policy, rules: Policy) -> None:
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
        sent = False

        async def noting(piece: str) -> None:
            nonlocal sent
            sent = True
            if sink is not None:
                await sink(piece)

        primary, rules = self.primary.respond(request, noting), self.rules
        # Once the model's answer has begun on the stream, another answer after it would
        # read as one garbled text: only an answer not yet begun falls back.
        return await self._either(
            "respond", primary, lambda: rules.respond(request, sink), usable=lambda: not sent
        )

    async def _either(
        self,
        step: str,
        primary: Awaitable[R],
        rules: Callable[[], Awaitable[R]],
        usable: Callable[[], bool] = lambda: True,
    ) -> R:
        try:
            return await primary
        except EngineUnavailableError as exc:
            if not (_retried() and usable()):
                raise
            try:
                served = await rules()
            except Exception:
                raise exc from None
            self.fallbacks += 1
            fallbacks = meter().create_counter(
                metrics.POLICY_FALLBACKS, "Policy steps the rules served, the model server down"
            )
            fallbacks.add(1, {"step": step})
            log.warning("policy.fallback_to_rules", step=step, error=str(exc))
            served.fallback = True
            served.warnings.append(
                f"the model server was unavailable: the {step} step was served by the rules "
                "policy (this answer is not cached)"
            )
            return served


def _retried() -> bool:
    """A blip (a dropped connection, one restart) gets Temporal's retry with the model:
    only the second attempt of a model activity falls back. Outside an activity (tests
    call the policy directly) there is no retry to wait for."""
    return not activity.in_activity() or activity.info().attempt >= FALLBACK_FROM_ATTEMPT
