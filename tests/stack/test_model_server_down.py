"""A model server that is down: the steps the rules can serve are served by them, and the
run's result says so, instead of the run failing after three attempts."""

from __future__ import annotations

from agentkeel.examples.shop.rules.policy import RulesPolicy
from agentkeel.inference.fallback import FallbackPolicy
from agentkeel.inference.llm.cascade import CascadePolicy
from agentkeel.inference.llm.policy import LlmPolicy
from agentkeel.schemas.result import AgentResult, CacheStatus, StepStatus
from agentkeel.schemas.route import Tier
from tests.support.agent_stack import StackFactory
from tests.support.engines import _unreachable


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
