"""Fakes at the model boundary only: a scripted policy and a scripted engine."""

from __future__ import annotations

import asyncio
import json
import math
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any

from agentkeel.examples.shop.rules.policy import RulesPolicy
from agentkeel.inference.engines.constraints import check_output
from agentkeel.inference.engines.protocol import (
    ChoiceConstraint,
    GenerateRequest,
    GenerateResult,
    JsonSchemaConstraint,
    TokenDelta,
    TokenLogprob,
)
from agentkeel.inference.llm.cascade import CascadePolicy
from agentkeel.inference.llm.plan_document import model_document
from agentkeel.inference.llm.policy import LlmPolicy
from agentkeel.inference.policy import TokenSink
from agentkeel.schemas.model_calls import (
    PlanInput,
    PlanResult,
    RespondInput,
    RespondResult,
    RouteInput,
    RouteResult,
)
from agentkeel.schemas.plan.model import Plan
from agentkeel.schemas.route import Route, Tier


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


class FakeEngine:
    """A scripted language model, at the engine boundary (no model runs).

    Honours the engine protocol the way a real constrained engine does: a choice request
    returns the scripted label with per-token logprobs built from `label_probs`; a JSON
    request returns the next scripted document, checked against the schema with the
    same `check_output` the real engines use (so a scripted off-schema document fails
    like a cut generation; a plan scripted in the `Plan` form is written in the model's
    compact form first, `inference.llm.plan_document`); `stream` yields the scripted
    answer word by word. Every prompt is recorded, and the most requests in flight at once.
    """

    def __init__(
        self,
        name: str = "fake-model",
        *,
        label_probs: Mapping[str, float] | None = None,
        documents: Sequence[Mapping[str, Any] | str] = (),
        answer: str = "Here is what I found.",
        delay_s: float = 0.0,
        returns_logprobs: bool = True,
        streams_json: bool = False,
    ) -> None:
        """`streams_json`: say so, and `stream` a JSON request's document in pieces of a
        few characters spread over `delay_s`, as a constrained server streams a plan."""
        self.name = name
        self.streams_json = streams_json
        self.returns_logprobs = returns_logprobs
        self.label_probs = dict(label_probs or {})
        self.documents = list(documents)
        self.answer = answer
        self.delay_s = delay_s
        self.prompts: list[str] = []
        self._json_calls = 0
        self.started = False
        self.in_flight = 0
        self.max_in_flight = 0

    async def start(self) -> None:
        self.started = True

    async def close(self) -> None:
        self.started = False

    async def generate(self, request: GenerateRequest) -> GenerateResult:
        self._enter(request)
        try:
            if self.delay_s:
                await asyncio.sleep(self.delay_s)
            constraint = request.constraint
            if isinstance(constraint, ChoiceConstraint):
                return self._label(request, constraint)
            if isinstance(constraint, JsonSchemaConstraint):
                text = self._next_document()
                parsed = check_output(constraint, text, "stop")
                return GenerateResult(text=text, finish_reason="stop", parsed=parsed)
            return GenerateResult(text=self.answer, finish_reason="stop")
        finally:
            self.in_flight -= 1

    def _next_document(self) -> str:
        index = min(self._json_calls, len(self.documents) - 1)
        self._json_calls += 1
        document = self.documents[index]
        if isinstance(document, Mapping) and "steps" in document:
            # Scripted in the Plan form for readability; written as a model writes it.
            document = model_document(document)
        return document if isinstance(document, str) else json.dumps(document)

    async def stream(self, request: GenerateRequest) -> AsyncIterator[TokenDelta]:
        if isinstance(request.constraint, JsonSchemaConstraint):
            async for delta in self._stream_document(request, request.constraint):
                yield delta
            return
        self._enter(request)
        try:
            words = self.answer.split(" ")
            for i, word in enumerate(words):
                if self.delay_s:
                    await asyncio.sleep(self.delay_s / len(words))
                last = i == len(words) - 1
                yield TokenDelta(
                    text=word if i == 0 else " " + word, finish_reason="stop" if last else None
                )
        finally:
            self.in_flight -= 1

    async def _stream_document(
        self, request: GenerateRequest, constraint: JsonSchemaConstraint
    ) -> AsyncIterator[TokenDelta]:
        self._enter(request)
        try:
            text = self._next_document()
            pieces = [text[i : i + 6] for i in range(0, len(text), 6)]
            for i, piece in enumerate(pieces):
                if self.delay_s:
                    await asyncio.sleep(self.delay_s / len(pieces))
                last = i == len(pieces) - 1
                yield TokenDelta(text=piece, finish_reason="stop" if last else None)
        finally:
            self.in_flight -= 1
        check_output(constraint, text, "stop")  # as the real engines check a streamed document

    def _enter(self, request: GenerateRequest) -> None:
        self.prompts.append(request.system + request.prompt)  # the whole text the model reads
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)

    def _label(self, request: GenerateRequest, constraint: ChoiceConstraint) -> GenerateResult:
        probs = {c: self.label_probs.get(c, 0.0) for c in constraint.choices}
        if not any(probs.values()):
            probs[constraint.choices[0]] = 1.0
        chosen = max(probs, key=lambda c: probs[c])
        top = {c: math.log(p) for c, p in probs.items() if p > 0}
        logprobs = [TokenLogprob(token=chosen, logprob=top[chosen], top=top)]
        return GenerateResult(
            text=chosen,
            finish_reason="stop",
            logprobs=logprobs if request.logprobs is not None and self.returns_logprobs else None,
        )


class FakeStreamingPolicy(RulesPolicy):
    """The rules policy, but its answer reaches the token stream word by word, `delay_s`
    apart, as a model's would (the rules render it whole, in one piece)."""

    name = "fake-streaming"

    def __init__(self, delay_s: float = 0.02) -> None:
        super().__init__()
        self.delay_s = delay_s

    async def respond(self, request: RespondInput, sink: TokenSink | None = None) -> RespondResult:
        result = await super().respond(request, None)
        if sink is not None:
            for i, word in enumerate(result.answer.split(" ")):
                await sink(word if i == 0 else " " + word)
                await asyncio.sleep(self.delay_s)
        return result


STATUS_PLAN = {
    "rationale": "look up the order, then track it",
    "steps": [
        {"id": "s1", "tool": "get_order", "args": {"order_id": 1001}},
        {"id": "s2", "tool": "track_shipment", "args": {"tracking_number": "$s1.tracking_number"}},
    ],
}
HEAVY_ANSWER = "Order 1001 is on its way with the carrier."
LIGHT_ANSWER = "Your order is on its way."


def cascade(
    light_probs: dict[str, float],
    heavy_documents: list[Any],
    *,
    heavy: FakeEngine | None = None,
    plan_attempts: int = 3,
) -> tuple[CascadePolicy, FakeEngine, FakeEngine]:
    light = FakeEngine(
        "light-fake", label_probs=light_probs, documents=[STATUS_PLAN], answer=LIGHT_ANSWER
    )
    heavy = heavy or FakeEngine("heavy-fake", documents=heavy_documents, answer=HEAVY_ANSWER)
    policy = CascadePolicy(
        LlmPolicy(light, tier=Tier.LIGHT, threshold=0.7),
        LlmPolicy(heavy, tier=Tier.HEAVY, threshold=0.7, plan_attempts=plan_attempts),
    )
    return policy, light, heavy
