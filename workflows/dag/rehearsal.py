"""A request's plan through the checks a run makes before its tools start, without Temporal.

`agentkeel.testing` publishes this for a domain's own tests: the domain's planner (its
rules policy) plans the question, then the plan meets what the workflow holds it to, with
the same functions the workflow calls: the actor check, admission (`refuse_plan`),
validation against the catalog (`validate_plan`), and for each side effect its provenance
(`schemas.plan.provenance`, as the effect gate reads it), the `UntrustedArgument` refusal
and whether it waits for an approver (`approval_reason`). No tool runs: a side effect's
`$ref` arguments are filled from `outputs` where the test gives them.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from agentkeel.schemas import errors
from agentkeel.schemas.actor import SYSTEM_ACTOR, Actor
from agentkeel.schemas.approvals import ApprovalPolicy
from agentkeel.schemas.model_calls import PlanInput, RouteInput
from agentkeel.schemas.origin import ArgumentOrigin
from agentkeel.schemas.plan.model import Plan, PlanStep
from agentkeel.schemas.plan.provenance import READS_TARGETS, Provenance, TrustedFacts
from agentkeel.schemas.plan.validation import PlanValidationError, validate_plan
from agentkeel.schemas.request import RunOptions
from agentkeel.schemas.result import StepError
from agentkeel.schemas.tools import ToolSpec
from agentkeel.schemas.tools.catalog import BUILT_IN_TOOLS, INTENT_JOINER
from agentkeel.sdk.domain import Domain
from agentkeel.workflows.dag.admission import refuse_plan
from agentkeel.workflows.dag.effect_gate import approval_reason, untrusted_refusal
from agentkeel.workflows.dag.resolve import resolve

__all__ = ["EffectCheck", "PlanCheck", "check_plan", "rehearse"]


@dataclass(frozen=True)
class EffectCheck:
    """One side-effecting step of the plan, as the effect gate would meet it."""

    step_id: str
    tool: str
    args: dict[str, Any]
    origins: dict[str, ArgumentOrigin]
    """Where its target and amount come from (`ArgumentOrigin.trusted`, `.says`)."""
    refused: StepError | None
    """`UntrustedArgument` when the run would refuse it; None when it goes on."""
    approval: str | None
    """Why it would wait for an approver; None when it would run at once (or is refused)."""


@dataclass(frozen=True)
class PlanCheck:
    """What a run of `question` would do before any tool starts."""

    question: str
    intent: str
    plan: Plan | None
    refused: StepError | None
    """Why the whole plan would not run (no plan, admission, validation); None if it runs."""
    effects: list[EffectCheck] = field(default_factory=list)

    @property
    def tools(self) -> list[str]:
        """The plan's tools in step order."""
        return [s.tool for s in self.plan.steps] if self.plan is not None else []

    def effect(self, tool: str) -> EffectCheck:
        """The (first) side effect of `tool`; `KeyError` naming those there are otherwise."""
        for effect in self.effects:
            if effect.tool == tool:
                return effect
        raise KeyError(f"the plan has no side effect {tool!r} ({[e.tool for e in self.effects]})")


async def rehearse(
    domain: Domain,
    question: str,
    *,
    actor: Actor | None = None,
    plan: Plan | None = None,
    outputs: Mapping[str, Any] | None = None,
    options: RunOptions | None = None,
    policy: ApprovalPolicy | None = None,
    threshold: float = 0.7,
) -> PlanCheck:
    """Plan `question` with `domain`'s rules policy (or take `plan`, as a caller's plan)
    and check it as a run would; `outputs`: step id -> the output its tool would return."""
    actor = actor or SYSTEM_ACTOR
    options = options or RunOptions()
    problem = domain.actor_problem(actor.role, actor.subject)
    if problem is not None:
        return PlanCheck(question, "", plan, _error(errors.INVALID_REQUEST, problem))
    tools = {s.name: s for s in (*domain.tools, *BUILT_IN_TOOLS)}
    if plan is not None:
        intent, allowed = "given_plan", _effects_of(plan, tools)
        role = domain.role(actor.role)
        if allowed and role is not None and not role.may_send_plans:
            why = f"{actor.describe()} may not send a plan with side effects"
            return PlanCheck(question, intent, plan, _error(errors.NOT_AUTHORIZED, why))
    else:
        intent, plan, refused = await _planned(domain, question, threshold)
        if refused is not None or plan is None:
            return PlanCheck(question, intent, plan, refused)
        asked = {
            t for part in intent.split(INTENT_JOINER) for t in domain.intent_tools().get(part, ())
        }
        allowed = frozenset(asked) & _effects_of(plan, tools)
    refused = refuse_plan(plan, options, allowed)
    if refused is None:
        try:
            validate_plan(plan, tools)
        except PlanValidationError as exc:
            refused = _error(exc.kind, exc.message)
    if refused is not None:
        return PlanCheck(question, intent, plan, refused)
    facts = TrustedFacts(
        text=question,
        subject=actor.subject,
        caller_plan=intent == "given_plan",
        rules=READS_TARGETS,
    )
    provenance = Provenance({s.id: s for s in plan.steps}, tools, facts)
    effects = [
        _effect(step, tools[step.tool], provenance, domain, actor, outputs or {}, policy)
        for step in plan.steps
        if not tools[step.tool].idempotent
    ]
    return PlanCheck(question, intent, plan, None, effects)


def check_plan(domain: Domain, question: str, **options: Any) -> PlanCheck:
    """`rehearse`, for a test that is not itself async."""
    return asyncio.run(rehearse(domain, question, **options))


async def _planned(
    domain: Domain, question: str, threshold: float
) -> tuple[str, Plan | None, StepError | None]:
    if domain.rules_policy is None:
        why = f"domain {domain.name} has no rules_policy: only a model or a caller's plan plans"
        return "", None, _error(errors.NO_PLANNER, why)
    planner = domain.rules_policy(threshold)
    routed = await planner.route(RouteInput(question=question))
    if routed.confident and routed.draft_plan is not None:
        return routed.route.intent, routed.draft_plan, None
    planned = await planner.plan(PlanInput(question=question, route=routed.route))
    if planned.error is not None or not planned.plan.steps:
        refused = planned.error or _error(errors.EMPTY_PLAN, "the planner wrote no steps")
        return routed.route.intent, planned.plan, refused
    # The router's reading alone allows side effects, as in a run (a planner has read tool
    # output, whose text must never ask for one).
    return routed.route.intent, planned.plan, None


def _effects_of(plan: Plan, tools: Mapping[str, ToolSpec]) -> frozenset[str]:
    return frozenset(s.tool for s in plan.steps if s.tool in tools and not tools[s.tool].idempotent)


def _effect(
    step: PlanStep,
    spec: ToolSpec,
    provenance: Provenance,
    domain: Domain,
    actor: Actor,
    outputs: Mapping[str, Any],
    policy: ApprovalPolicy | None,
) -> EffectCheck:
    args = (
        {name: resolve(value, outputs) for name, value in step.args.items()}
        if outputs
        else step.args
    )
    origins = provenance.of_call(step, args)
    untrusted = {name: o for name, o in origins.items() if not o.trusted}
    refused = untrusted_refusal(step.tool, step.id, untrusted, domain.untrusted_effects)
    amount = args.get(spec.amount_arg, 0) if spec.amount_arg is not None else 0
    why = None
    if refused is None and (spec.amount_arg is not None or spec.needs_approval or untrusted):
        why = approval_reason(
            spec,
            policy or ApprovalPolicy(),
            actor,
            amount if isinstance(amount, int) else 0,
            already=0,
            scoped=domain.is_scoped(actor.role),
            untrusted=bool(untrusted),
        )
    return EffectCheck(step.id, step.tool, dict(args), origins, refused, why)


def _error(kind: str, message: str) -> StepError:
    return StepError(type=kind, message=message, non_retryable=True)
