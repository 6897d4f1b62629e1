"""The graph's model-facing activities, served by the inference worker pool."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from temporalio import activity

from inference.policy import Policy
from schemas.agent import (
    JoinInput,
    JoinResult,
    PlanInput,
    PlanResult,
    RespondInput,
    RespondResult,
    RouteInput,
    RouteResult,
)


class InferenceActivities:
    """Owns the policy (and through it the engines) for the life of the worker."""

    def __init__(self, policy: Policy) -> None:
        self._policy = policy

    @activity.defn(name="route")
    async def route(self, request: RouteInput) -> RouteResult:
        return await self._policy.route(request)

    @activity.defn(name="plan")
    async def plan(self, request: PlanInput) -> PlanResult:
        return await self._policy.plan(request)

    @activity.defn(name="join")
    async def join(self, request: JoinInput) -> JoinResult:
        return await self._policy.join(request)

    @activity.defn(name="respond")
    async def respond(self, request: RespondInput) -> RespondResult:
        return await self._policy.respond(request)

    def all(self) -> list[Callable[..., Any]]:
        return [self.route, self.plan, self.join, self.respond]
