"""Fakes at the model boundary only: policies that return scripted plans."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from inference.rules import RulesPolicy
from schemas.agent import PlanInput, PlanResult, RouteInput, RouteResult
from schemas.plan import Plan
from schemas.route import Route, Tier


class FakeScriptedPolicy(RulesPolicy):
    """Routes every question as unsure and hands out the scripted plans in order.

    Join and respond stay the real rules policy, so replanning and answers are
    exercised for real; only the model's planning output is scripted. The last
    plan repeats once the script runs out.
    """

    name = "fake-scripted"

    def __init__(self, plans: Sequence[Plan | Mapping[str, Any]]) -> None:
        super().__init__()
        self._plans = [p if isinstance(p, Plan) else Plan.model_validate(p) for p in plans]
        self.plan_requests: list[PlanInput] = []

    async def route(self, request: RouteInput) -> RouteResult:
        route = Route(intent="scripted", confidence=0.1, tier=Tier.RULES, reason="fake")
        return RouteResult(route=route, confident=False)

    async def plan(self, request: PlanInput) -> PlanResult:
        self.plan_requests.append(request)
        index = min(len(self.plan_requests) - 1, len(self._plans) - 1)
        return PlanResult(plan=self._plans[index])
