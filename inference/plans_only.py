"""The policy of a domain without a model and without a rules policy of its own.

It never plans: a request that carries its plan (`AgentRequest.plan`) runs, any other is
answered at once that no planner serves this domain. It never falls back to another
domain's plans. Answers are the tools' own renderings (`inference.answers`).
"""

from __future__ import annotations

from agentkeel.inference.answers import no_plan, rendered_response, unsure_route
from agentkeel.inference.policy import TokenSink
from agentkeel.schemas import model_calls as calls


class PlansOnlyPolicy:
    name = "plans-only"

    def __init__(self, domain: str) -> None:
        self._why = (
            f"domain {domain} has no rules policy and no model is configured "
            "(AGENTKEEL_LIGHT_URL): send the plan with the request (`plan`)"
        )

    async def route(self, request: calls.RouteInput) -> calls.RouteResult:
        return unsure_route(self._why)

    async def plan(self, request: calls.PlanInput) -> calls.PlanResult:
        return no_plan(self._why, "no planner")

    async def join(self, request: calls.JoinInput) -> calls.JoinResult:
        failed = [s.id for s in request.steps if s.status == "failed"]
        reason = f"{', '.join(failed)} failed" if failed else "the plan ran"
        if request.plan_error is not None:
            reason = f"no plan to run ({request.plan_error.type})"
        return calls.JoinResult(decision=calls.JoinDecision.FINISH, reason=reason)

    async def respond(
        self, request: calls.RespondInput, sink: TokenSink | None = None
    ) -> calls.RespondResult:
        return await rendered_response(request, sink)
