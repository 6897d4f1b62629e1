"""The policy interface the agent graph calls: route, plan, join, respond.

Implementations in the core: `LlmPolicy` over one engine (`inference.llm.policy`),
`CascadePolicy` (light router, heavy planner: `inference.llm.cascade`), `PatternPolicy`
(a model-free planner a domain declares: `inference.patterns`), `PlansOnlyPolicy` (only
plans sent with requests: `inference.plans_only`) and the fallback that stands in while a
model server is down (`inference.fallback`). A domain may bring its own deterministic
policy (`Domain.rules_policy`; the example shop's rules are one). The inference worker
hosts exactly one policy and exposes it as activities.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Protocol, runtime_checkable

from agentkeel.schemas import model_calls as calls

DEFAULT_ROUTER_THRESHOLD = 0.7
"""Below this confidence the route is not trusted and the planner writes the plan."""


TokenSink = Callable[[str], Awaitable[None]]
"""Receives each piece of a streamed answer as it is generated."""


@runtime_checkable
class Policy(Protocol):
    """What the graph needs from a model. Methods are async and must not block the loop."""

    name: str

    async def route(self, request: calls.RouteInput) -> calls.RouteResult: ...

    async def plan(self, request: calls.PlanInput) -> calls.PlanResult: ...

    async def join(self, request: calls.JoinInput) -> calls.JoinResult: ...

    async def respond(
        self, request: calls.RespondInput, sink: TokenSink | None = None
    ) -> calls.RespondResult:
        """The answer; each piece goes to `sink` as soon as it exists (the token stream)."""
        ...


def join_rejected_plan(request: calls.JoinInput) -> calls.JoinResult | None:
    """Every policy's join for a plan the scheduler rejected; None when none was rejected.

    A rejected plan ran nothing, so there is nothing to judge: replan while the budget
    lasts, then finish (the answer says the plan could not run).
    """
    if request.plan_error is None:
        return None
    if request.replans < request.max_replans:
        return calls.JoinResult(
            decision=calls.JoinDecision.REPLAN,
            reason=f"plan rejected ({request.plan_error.type}); planning again",
        )
    return calls.JoinResult(
        decision=calls.JoinDecision.FINISH,
        reason=f"plan rejected and {request.replans} replans used",
    )
