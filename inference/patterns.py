"""A model-free planner any domain can declare: questions matched by patterns, plans by
templates (`agentkeel.PlanPattern`).

Each pattern is a regular expression and the plan to run when it matches, whose string
arguments may name the match's groups (`"{1}"`, `"{order}"`); an argument that is exactly
one group becomes an integer when the group is all digits. The first pattern that matches
plans the request, so list the more particular ones first. A question no pattern matches
is unsure and gets no plan: the answer says so. Answers are
the tools' own renderings.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

from agentkeel.inference.answers import no_plan, rendered_response, unsure_route
from agentkeel.inference.policy import TokenSink
from agentkeel.schemas import model_calls as calls
from agentkeel.schemas.errors import NO_PLANNER
from agentkeel.schemas.plan.model import Plan, PlanStep
from agentkeel.schemas.route import ConfidenceBasis, Route, Tier
from agentkeel.sdk.patterns import PlanPattern

__all__ = ["PatternPlanner", "PatternPolicy", "PlanPattern", "pattern_policy"]

_GROUP = re.compile(r"\{(\w+)\}")
_STEP_REF = re.compile(r"\$([A-Za-z][A-Za-z0-9_]*)")


class PatternPolicy:
    name = "patterns"

    def __init__(self, patterns: Sequence[PlanPattern], *, threshold: float = 0.7) -> None:
        self._patterns = [(p, re.compile(p.pattern, re.IGNORECASE)) for p in patterns]
        self.threshold = threshold

    async def route(self, request: calls.RouteInput) -> calls.RouteResult:
        found = next(
            ((p, m) for p, rx in self._patterns if (m := rx.search(request.question))), None
        )
        if found is None:
            return unsure_route("no pattern matched")
        pattern, match = found
        steps = _instantiate(pattern, match)
        plan = Plan(steps=steps, rationale=f"patterns: {pattern.intent}")
        route = Route(
            intent=pattern.intent,
            confidence=1.0,
            basis=ConfidenceBasis.RULES,
            tier=Tier.RULES,
            tools=sorted({s.tool for s in steps}),
            reason=f"matched the patterns of {pattern.intent}",
        )
        return calls.RouteResult(route=route, confident=True, draft_plan=plan)

    async def plan(self, request: calls.PlanInput) -> calls.PlanResult:
        refused = request.plan_error
        if refused is not None and refused.type != NO_PLANNER:
            # A pattern planned and the run refused its plan: that is the answer's cause.
            return calls.PlanResult(
                plan=Plan(rationale="patterns: the matched pattern's plan was refused"),
                tier=Tier.RULES,
                error=refused,
            )
        return no_plan(
            "no pattern of this domain matches the request, and no model plans it", "no pattern"
        )

    async def join(self, request: calls.JoinInput) -> calls.JoinResult:
        if request.plan_error is not None:
            # The patterns would plan the same again: the refusal is the answer, as it is.
            return calls.JoinResult(
                decision=calls.JoinDecision.FINISH,
                reason=f"the pattern's plan was refused ({request.plan_error.type})",
            )
        return calls.JoinResult(decision=calls.JoinDecision.FINISH, reason="answered")

    async def respond(
        self, request: calls.RespondInput, sink: TokenSink | None = None
    ) -> calls.RespondResult:
        return await rendered_response(request, sink)


class PatternPlanner:
    """A `Domain.rules_policy` planning from `patterns`: called with the router threshold,
    it makes the policy. Its `patterns` are what the domain checks against its catalog
    when it is built (`sdk.pattern_check`)."""

    def __init__(self, patterns: Sequence[PlanPattern]) -> None:
        self.patterns = tuple(patterns)

    def __call__(self, threshold: float) -> PatternPolicy:
        return PatternPolicy(self.patterns, threshold=threshold)


def pattern_policy(*patterns: PlanPattern) -> Callable[[float], PatternPolicy]:
    """A `Domain.rules_policy` planning from `patterns`."""
    return PatternPlanner(patterns)


def _instantiate(pattern: PlanPattern, match: re.Match[str]) -> list[PlanStep]:
    renumber = {step["id"]: f"s{i + 1}" for i, step in enumerate(pattern.steps)}

    def fill(value: Any) -> Any:
        if isinstance(value, str):
            whole = _GROUP.fullmatch(value)
            if whole is not None:
                got = match.group(_group_key(whole.group(1)))
                return int(got) if got is not None and got.isdigit() else got
            value = _GROUP.sub(lambda g: match.group(_group_key(g.group(1))) or "", value)
            return _STEP_REF.sub(lambda r: "$" + renumber.get(r.group(1), r.group(1)), value)
        if isinstance(value, dict):
            return {k: fill(v) for k, v in value.items()}
        if isinstance(value, list):
            return [fill(v) for v in value]
        return value

    steps = []
    for step in pattern.steps:
        filled = fill(dict(step))
        filled["id"] = renumber[step["id"]]
        if "after" in step:
            filled["after"] = [renumber.get(a, a) for a in step["after"]]
        steps.append(PlanStep.model_validate(filled))
    return steps


def _group_key(name: str) -> int | str:
    return int(name) if name.isdigit() else name
