"""A model server that is down: the steps the rules can serve are served by them, and the
run's result says so, instead of the run failing after three attempts."""

from __future__ import annotations

import socket

import pytest

from agentkeel.examples.shop.rules.policy import RulesPolicy
from agentkeel.inference.engines.openai_compat import OpenAICompatEngine
from agentkeel.inference.engines.protocol import EngineUnavailableError
from agentkeel.inference.fallback import FallbackPolicy
from agentkeel.inference.llm.cascade import CascadePolicy
from agentkeel.inference.llm.policy import LlmPolicy
from agentkeel.inference.policy import TokenSink
from agentkeel.schemas.model_calls import RespondInput, RespondResult, RouteInput, RouteResult
from agentkeel.schemas.result import AgentResult, CacheStatus, StepStatus
from agentkeel.schemas.route import Route, Tier
from tests.conftest import StackFactory


def _closed_port() -> int:
    with socket.socket() as s:  # bound, then released: nothing listens there
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _unreachable(name: str) -> OpenAICompatEngine:
    return OpenAICompatEngine(base_url=f"http://127.0.0.1:{_closed_port()}/v1", model=name)


async def test_runs_complete_on_the_rules_while_the_model_server_is_down(
    make_stack: StackFactory,
) -> None:
    light, heavy = _unreachable("router"), _unreachable("planner")
    cascade = CascadePolicy(LlmPolicy(light, tier=Tier.LIGHT), LlmPolicy(heavy, tier=Tier.HEAVY))
    policy = FallbackPolicy(cascade, RulesPolicy())
    stack = await make_stack(policy=policy)
    try:
        result = await stack.ask("Where is order 1001?")
        assert_served_by_the_rules(result, policy)
        # A stand-in's answer is not kept for the next asker, who gets the model when back.
        again = await stack.ask("Where is order 1001?")
        assert again.cache == CacheStatus.MISS
    finally:
        await light.close()
        await heavy.close()


def assert_served_by_the_rules(result: AgentResult, policy: FallbackPolicy) -> None:
    assert result.answer and "1001" in result.answer
    assert [s.status for s in result.steps] == [StepStatus.SUCCEEDED] * 2
    assert result.route.tier == Tier.RULES
    said = " ".join(result.warnings)
    assert "model server was unavailable" in said
    assert "route step was served by the rules" in said
    assert "respond step was served by the rules" in said
    assert "127.0.0.1" not in said, "no internal address in what users read"
    assert policy.fallbacks >= 2


async def test_what_the_rules_cannot_serve_still_fails_with_the_engine_error() -> None:
    engine = _unreachable("router")
    policy = FallbackPolicy(LlmPolicy(engine, tier=Tier.LIGHT), RulesThatServeNothing())
    try:
        with pytest.raises(EngineUnavailableError, match="no model server answers"):
            await policy.route(RouteInput(question="Where is order 1001?"))
    finally:
        await engine.close()
    assert policy.fallbacks == 0


class RulesThatServeNothing(RulesPolicy):
    async def route(self, request: RouteInput) -> RouteResult:
        raise ValueError("no rule matches")


class FakeEngineThatDiesMidAnswer(RulesPolicy):
    """A fake at the model boundary: its answer's first words are streamed, then the server
    goes away."""

    async def respond(self, request: RespondInput, sink: TokenSink | None = None) -> RespondResult:
        if sink is not None:
            await sink("Order 1001 is")
        raise EngineUnavailableError("the server went away")


async def test_an_answer_already_streaming_is_not_followed_by_the_rules_answer() -> None:
    policy = FallbackPolicy(FakeEngineThatDiesMidAnswer(), RulesPolicy())
    streamed: list[str] = []

    async def sink(piece: str) -> None:
        streamed.append(piece)

    request = RespondInput(
        question="Where is order 1001?",
        route=Route(intent="order_status", confidence=1.0),
        steps=[],
    )
    with pytest.raises(EngineUnavailableError):
        await policy.respond(request, sink)
    assert streamed == ["Order 1001 is"] and policy.fallbacks == 0
