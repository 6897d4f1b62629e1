"""The deterministic rules policy: the default when no model is configured."""

from __future__ import annotations

from agentkeel.examples.shop.rules.intents import extract_entities, matched_intents, satisfied
from agentkeel.examples.shop.rules.plans import add_intent, exploratory_plan, new_builder
from agentkeel.inference.answers import rendered_response
from agentkeel.inference.policy import DEFAULT_ROUTER_THRESHOLD, TokenSink, join_rejected_plan
from agentkeel.schemas import model_calls as calls
from agentkeel.schemas.route import ConfidenceBasis, Route, Tier
from agentkeel.schemas.tools.catalog import INTENT_JOINER

# Rule levels, not probabilities: nobody measured them. They order the rule's cases
# (sure when the keywords and the entities they need agree, unsure when either is
# missing) so the router threshold can be applied to them like a router's confidence;
# every route says so (`basis: rules`).
CONFIDENT_SINGLE = 0.92
CONFIDENT_COMPOUND = 0.85
PARTIAL = 0.55
ENTITIES_ONLY = 0.4
NOTHING = 0.15


class RulesPolicy:
    """Recognises the demo intents from the question text; builds real DAG plans."""

    name = "rules"

    def __init__(self, *, threshold: float = DEFAULT_ROUTER_THRESHOLD) -> None:
        self.threshold = threshold

    async def route(self, request: calls.RouteInput) -> calls.RouteResult:
        question = request.question
        entities = extract_entities(question)
        intents = matched_intents(question)
        ready = [i for i in intents if satisfied(i, entities)]
        # "How do refunds work?" names refunds but no order: it is a policy question.
        if "policy" in ready and len(ready) > 1 and not entities.any:
            ready = ["policy"]
        # ... but "can I get a refund for order 1002?" is about one order: stay unsure.
        unmet = [
            i
            for i in intents
            if i not in ready and not (i == "refund" and "policy" in ready and not entities.orders)
        ]
        if ready and not unmet:
            confidence = CONFIDENT_SINGLE if len(ready) == 1 else CONFIDENT_COMPOUND
            reason = f"keywords and entities agree on {', '.join(ready)}"
        elif ready:
            confidence, reason = PARTIAL, f"{', '.join(unmet)} lacks the entity it needs"
        elif intents:
            confidence, reason = ENTITIES_ONLY, f"{', '.join(intents)} without the entity needed"
        elif entities.any:
            confidence, reason = ENTITIES_ONLY, "entities but no recognisable intent"
        else:
            confidence, reason = NOTHING, "no intent keyword and no entity"
        intent = INTENT_JOINER.join(ready) if ready else (intents[0] if intents else "unknown")
        confident = confidence >= self.threshold
        draft = None
        if confident:
            builder = new_builder(entities)
            for name in ready:
                add_intent(builder, name, entities, question)
            draft = builder.build(f"rules: {reason}")
        route = Route(
            intent=intent,
            confidence=confidence,
            basis=ConfidenceBasis.RULES,
            tier=Tier.RULES,
            tools=sorted({s.tool for s in draft.steps}) if draft else [],
            reason=reason,
        )
        return calls.RouteResult(route=route, confident=confident, draft_plan=draft)

    async def plan(self, request: calls.PlanInput) -> calls.PlanResult:
        entities = extract_entities(request.question)
        return calls.PlanResult(plan=exploratory_plan(entities, request.question), tier=Tier.RULES)

    async def join(self, request: calls.JoinInput) -> calls.JoinResult:
        rejected = join_rejected_plan(request)
        if rejected is not None:
            return rejected
        failed = [s.id for s in request.steps if s.status == "failed"]
        if failed:
            return calls.JoinResult(
                decision=calls.JoinDecision.FINISH,
                reason=f"{', '.join(failed)} failed; answering with what is known",
            )
        return calls.JoinResult(decision=calls.JoinDecision.FINISH, reason="all steps succeeded")

    async def respond(
        self, request: calls.RespondInput, sink: TokenSink | None = None
    ) -> calls.RespondResult:
        return await rendered_response(request, sink)
