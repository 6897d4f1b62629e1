"""An LLM-backed policy over one engine: route, plan, join and a streamed respond.

One instance per tier (light or heavy); `cascade.CascadePolicy` composes them. Every
model call is greedy and constrained where the output is machine-read: the route and
the join decode one label from a closed list, the plan decodes JSON against a schema
built from the tool catalog. A plan is then checked with the scheduler's own
validation before it leaves the activity, and a rejected decode is retried with the
error in the prompt; the workflow's replanning loop covers what remains.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import structlog
from pydantic import ValidationError

from agentkeel.inference.engines.protocol import (
    ConstraintViolationError,
    Engine,
    JsonSchemaConstraint,
)
from agentkeel.inference.llm.confidence import UnmeasuredRoute
from agentkeel.inference.llm.context import ContextBuilder
from agentkeel.inference.llm.decoding import choose, generate_plan, request_of, stream
from agentkeel.inference.llm.given_reads import given_steps, prompt_block, uses_of, with_given
from agentkeel.inference.llm.plan_document import PlanDocumentError, plan_fields
from agentkeel.inference.llm.plan_schema import plan_json_schema
from agentkeel.inference.llm.prompts import (
    JOIN_LABELS,
    PATCH_INSTRUCTION,
    intents,
    route_labels,
    system_prefix,
)
from agentkeel.inference.llm.route_judging import judged_route
from agentkeel.inference.llm.route_reading import RouteConfidence, read_route
from agentkeel.inference.policy import DEFAULT_ROUTER_THRESHOLD, TokenSink, join_rejected_plan
from agentkeel.schemas import model_calls as calls
from agentkeel.schemas.errors import INVALID_MODEL_OUTPUT
from agentkeel.schemas.plan.answer_template import template_problem
from agentkeel.schemas.plan.model import Plan
from agentkeel.schemas.plan.patch_check import check_patch
from agentkeel.schemas.plan.validation import PlanValidationError, validate_plan
from agentkeel.schemas.result import StepError, StepStatus
from agentkeel.schemas.route import ConfidenceBasis, Route, Tier
from agentkeel.schemas.tools import TOOLS

log = structlog.get_logger(__name__)

PLAN_MAX_TOKENS = 384
ANSWER_MAX_TOKENS = 200
ANSWER_STOPS = ["\nUser:", "\nQuestion:", "\n\n\n"]


class LlmPolicy:
    """`Policy` over one engine, for one tier."""

    def __init__(
        self,
        engine: Engine,
        *,
        tier: Tier,
        threshold: float = DEFAULT_ROUTER_THRESHOLD,
        context: ContextBuilder | None = None,
        plan_attempts: int = 3,
        plan_max_tokens: int = PLAN_MAX_TOKENS,
        answer_max_tokens: int = ANSWER_MAX_TOKENS,
        unmeasured_route: UnmeasuredRoute = "escalate",
        route_confidence: RouteConfidence = "logprobs",
        classify: Callable[[str], Awaitable[float]] | None = None,
    ) -> None:
        self.engine = engine
        self.tier = tier
        self.name = f"{tier.value}:{engine.name}"
        self.threshold = threshold
        self.context = context or ContextBuilder()
        self.plan_attempts = max(1, plan_attempts)
        self.plan_max_tokens = plan_max_tokens
        self.answer_max_tokens = answer_max_tokens
        self.unmeasured_route = unmeasured_route
        self.route_confidence = route_confidence
        self.classify = classify
        """The route classifier's confidence for a question (`route_confidence` `classifier`)."""

    async def route(self, request: calls.RouteInput) -> calls.RouteResult:
        def prompt(cue: str) -> str:
            tail = f"User: {request.question}\n{cue}"
            return self.context.build(system_prefix(), tail, history=request.history)

        try:
            classify = self.classify
            label, confidence, basis = await read_route(
                self.engine, self.tier, prompt, route_labels(), self.route_confidence,
                (lambda: classify(request.question)) if classify is not None else None,
            )  # fmt: skip
        except ConstraintViolationError as exc:
            # A server that could not constrain the label: an unsure route, not a failed run.
            route = Route(
                intent="unknown",
                confidence=0.0,
                basis=ConfidenceBasis.UNMEASURED,
                tier=self.tier,
                reason=f"{self.engine.name} gave no label: {exc}",
            )
            return calls.RouteResult(route=route, confident=False)
        route, confident = judged_route(
            label, confidence, basis, self.engine.name, self.tier, self.threshold,
            self.unmeasured_route,
        )  # fmt: skip
        if not confident:
            return calls.RouteResult(route=route, confident=False)
        # One decode only: a draft that needs correcting is the planner's job.
        planned = await self._plan(
            calls.PlanInput(
                question=request.question,
                route=route,
                history=request.history,
                started_reads=request.started_reads,
            ),
            attempts=1,
        )
        if planned.error is not None:
            # The router was sure of the intent but could not write a plan: let the planner.
            route.reason += f"; draft plan unusable ({planned.error.message[:80]})"
            return calls.RouteResult(route=route, confident=False)
        route.tools = sorted({s.tool for s in planned.plan.steps})
        return calls.RouteResult(route=route, confident=True, draft_plan=planned.plan)

    async def plan(self, request: calls.PlanInput) -> calls.PlanResult:
        """A plan valid against the catalog; the heavy tier also re-reads the intent."""
        return await self._plan(request, attempts=self.plan_attempts)

    async def _plan(self, request: calls.PlanInput, *, attempts: int) -> calls.PlanResult:
        # The heavy tier always reads the intent afresh; any tier does when the router
        # could not tell (no heavy tier configured: the light model plans its own "unknown").
        rerouting = self.tier == Tier.HEAVY or request.route.intent not in intents()
        patching = request.patch and bool(request.previous_steps)
        # (A patch reads no intent again: the round before's reading stands.)
        # A first plan builds on the reads the run started from the request (`given_reads`).
        given = [] if patching or request.attempt else given_steps(request.started_reads)
        schema = plan_json_schema(
            intents() if rerouting and not patching else None, patch=patching, given=len(given)
        )
        known = "" if rerouting and not patching else f"Intent: {request.route.intent}\n"
        if patching:
            known += PATCH_INSTRUCTION
        known += prompt_block(given)
        previous = request.previous_steps if patching else []
        kept = frozenset(s.id for s in previous if s.status != StepStatus.FAILED)
        last_error: StepError | None = None
        for attempt in range(attempts):
            prompt = self.context.build(
                system_prefix(),
                f"User: {request.question}\n{known}Plan JSON:",
                history=request.history,
                steps=request.previous_steps,
                plan_error=last_error or request.plan_error,
            )
            try:
                result = await generate_plan(
                    self.engine,
                    self.tier,
                    request_of(
                        prompt,
                        max_tokens=self.plan_max_tokens,
                        constraint=JsonSchemaConstraint(json_schema=schema),
                    ),
                    ready=[str(call.step) for call in given],
                )
                document = plan_fields(result.parsed)
                intent = document.pop("intent", None)
                uses = uses_of(document.pop("uses", None))
                plan = with_given(Plan.model_validate(document), given, TOOLS, uses=uses)
                plan = _without_bad_answer(plan, kept)
                if patching:  # its own steps here; merged with the steps it keeps, by the run
                    check_patch(plan, request.previous_steps, TOOLS)
                else:
                    validate_plan(plan, TOOLS)
            except (ConstraintViolationError, PlanDocumentError) as exc:
                last_error = StepError(type=INVALID_MODEL_OUTPUT, message=str(exc))
            except ValidationError as exc:
                last_error = StepError(type=INVALID_MODEL_OUTPUT, message=_first_error(exc))
            except PlanValidationError as exc:
                last_error = StepError(type=exc.kind, message=exc.message)
            else:
                return calls.PlanResult(
                    plan=plan,
                    tier=self.tier,
                    route=self._reroute(request, intent, plan),
                    patch=patching,
                )
            log.info(
                "plan_rejected", tier=self.tier.value, attempt=attempt, error=last_error.message
            )
        assert last_error is not None
        return calls.PlanResult(
            plan=Plan(rationale=f"no usable plan after {attempts} decodes"),
            tier=self.tier,
            error=last_error.model_copy(update={"non_retryable": True}),
        )

    def _reroute(self, request: calls.PlanInput, intent: str | None, plan: Plan) -> Route | None:
        if intent is None:
            return None
        previous = request.route
        if previous.router_intent is None:  # the router's route: this is the first re-reading
            router_intent = previous.intent
            reason = f"{self.engine.name} planned {intent}"
        else:  # a replan: the router's reading stays what it was
            router_intent = previous.router_intent
            reason = previous.reason
        overridden = router_intent if intent != router_intent else None
        if overridden is not None and previous.router_intent is None:
            reason += f", overriding the router's {overridden} ({previous.confidence_told})"
        return Route(
            intent=intent,
            confidence=previous.confidence,
            basis=previous.basis,
            tier=self.tier,
            tools=sorted({s.tool for s in plan.steps}),
            reason=reason,
            router_intent=router_intent,
            overridden_intent=overridden,
        )

    async def join(self, request: calls.JoinInput) -> calls.JoinResult:
        rejected = join_rejected_plan(request)
        if rejected is not None:
            return rejected
        prompt = self.context.build(
            system_prefix(),
            f"User: {request.question}\nDo these results answer the user "
            "(finish), or is another plan needed (replan)?\nDecision:",
            steps=request.steps,
        )
        failed = [s.id for s in request.steps if s.status == "failed"]
        why = f"{', '.join(failed)} failed; " if failed else ""
        try:
            label, confidence = await choose(self.engine, self.tier, prompt, JOIN_LABELS)
        except ConstraintViolationError as exc:
            return calls.JoinResult(
                decision=calls.JoinDecision.FINISH, reason=f"{why}no decision: {exc}"
            )
        return calls.JoinResult(
            decision=calls.JoinDecision.REPLAN if label == "replan" else calls.JoinDecision.FINISH,
            reason=f"{why}{self.engine.name} chose {label} ({_p(confidence)})",
        )

    async def respond(
        self, request: calls.RespondInput, sink: TokenSink | None = None
    ) -> calls.RespondResult:
        problem = ""
        if request.plan_error is not None:
            problem = (
                f"No plan could run ({request.plan_error.type}: {request.plan_error.message}).\n"
            )
        prompt = self.context.build(
            system_prefix(),
            f"{problem}User: {request.question}\nAgent:",
            history=request.history,
            steps=request.steps,
        )
        answer = request_of(prompt, max_tokens=self.answer_max_tokens, stop=ANSWER_STOPS)
        parts, first_at = await stream(self.engine, self.tier, answer, sink)
        return calls.RespondResult(answer="".join(parts).strip(), first_token_at=first_at)


def _p(confidence: float | None) -> str:
    return "unmeasured" if confidence is None else f"p={confidence:.2f}"


def _first_error(exc: ValidationError) -> str:
    error: dict[str, Any] = dict(exc.errors()[0])
    where = ".".join(str(p) for p in error.get("loc", ()))
    return f"{where}: {error.get('msg', 'invalid')}"


def _without_bad_answer(plan: Plan, kept: frozenset[str] = frozenset()) -> Plan:
    """The plan, less an answer template that cannot be filled: the template is optional
    (the respond step writes the answer then), so a bad one costs no replan. `kept`: the
    steps a patch keeps, which its template may name too."""
    if plan.answer is None:
        return plan
    if template_problem(plan.answer, frozenset(s.id for s in plan.steps) | kept) is None:
        return plan
    return plan.model_copy(update={"answer": None})
