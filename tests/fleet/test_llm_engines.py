"""The LLM policy over real vLLM engines on the CPU, in runs on the real stack.

Gemma 3 270M base gives poor answers: these tests check what the policy promises
whatever the model's wisdom: labels from the closed list with a probability in [0, 1]
that decides the cascade, plans valid against the plan schema by construction, answers
streamed token by token to the run's stream, time to first token recorded, and model
requests of concurrent runs meeting in the engine's batch.
"""

from __future__ import annotations

import asyncio

import jsonschema
import pytest
import redis.asyncio as aioredis

pytest.importorskip("vllm", reason="vLLM is not installed (the llm-cpu or gpu extra)")

from agentkeel.client.token_follow import read_answer
from agentkeel.examples.shop.rules.policy import RulesPolicy
from agentkeel.inference.engines.metered import MeteredEngine
from agentkeel.inference.engines.protocol import Engine, GenerateRequest, JsonSchemaConstraint
from agentkeel.inference.llm.cascade import CascadePolicy
from agentkeel.inference.llm.context import ContextBuilder
from agentkeel.inference.llm.plan_schema import plan_json_schema
from agentkeel.inference.llm.policy import LlmPolicy
from agentkeel.inference.llm.prompts import route_labels, system_prefix
from agentkeel.inference.policy import TokenSink
from agentkeel.schemas.errors import INVALID_MODEL_OUTPUT, PLAN_ERROR_KINDS
from agentkeel.schemas.model_calls import PlanInput, RespondInput, RespondResult, RouteInput
from agentkeel.schemas.route import Route, Tier
from agentkeel.schemas.tokens import token_stream_key
from tests.support.agent_stack import StackFactory
from tests.support.models import report

# Short outputs: a 270M model on 2 cores decodes about 8 tokens/s alone.
PLAN_TOKENS = 160
ANSWER_TOKENS = 24
CONTEXT = ContextBuilder(budget=1400)


def policy(engine: Engine, tier: Tier, threshold: float = 0.7) -> LlmPolicy:
    return LlmPolicy(
        engine,
        tier=tier,
        threshold=threshold,
        context=CONTEXT,
        plan_attempts=1,
        plan_max_tokens=PLAN_TOKENS,
        answer_max_tokens=ANSWER_TOKENS,
    )


async def test_route_is_a_label_with_a_probability(vllm_engine: Engine) -> None:
    for threshold in (0.0, 1.0):
        routed = await policy(vllm_engine, Tier.LIGHT, threshold).route(
            RouteInput(question="Where is order 1001?")
        )
        route = routed.route
        report(f"route at threshold {threshold}: {route.intent} p={route.confidence:.3f}")
        assert route.intent in (*route_labels(), "unknown")
        assert 0.0 <= route.confidence <= 1.0
        assert route.tier == Tier.LIGHT
        if threshold == 1.0 and route.confidence < 1.0:
            assert not routed.confident and routed.draft_plan is None


async def test_a_constrained_plan_is_schema_valid_by_construction(vllm_engine: Engine) -> None:
    schema = plan_json_schema()
    prompt = system_prefix() + "User: Where is order 1001?\nPlan JSON:"
    result = await vllm_engine.generate(
        GenerateRequest(
            prompt=prompt,
            max_tokens=PLAN_TOKENS,
            constraint=JsonSchemaConstraint(json_schema=schema),
        )
    )
    if result.finish_reason == "stop":
        jsonschema.validate(result.parsed, schema)
    # Through the policy: a plan that passed the scheduler's validation, or a named error.
    route = Route(intent="order_status", confidence=0.5, tier=Tier.LIGHT)
    planned = await policy(vllm_engine, Tier.LIGHT).plan(
        PlanInput(question="Where is order 1001?", route=route)
    )
    if planned.error is None:
        assert planned.plan.steps
    else:
        assert planned.error.type in (*PLAN_ERROR_KINDS, INVALID_MODEL_OUTPUT)
        assert planned.plan.steps == []


async def test_an_answer_streams_piece_by_piece(vllm_engine: Engine) -> None:
    pieces: list[str] = []

    async def sink(text: str) -> None:
        pieces.append(text)

    route = Route(intent="policy", confidence=0.9, tier=Tier.LIGHT)
    answered = await policy(vllm_engine, Tier.LIGHT).respond(
        RespondInput(question="What is your return policy?", route=route, steps=[]), sink
    )
    assert len(pieces) > 1
    assert "".join(pieces).strip() == answered.answer
    assert answered.first_token_at is not None


class RulesWithModelAnswers(RulesPolicy):
    """Rules route and plan (no decode cost); the real model writes every answer."""

    def __init__(self, writer: LlmPolicy) -> None:
        super().__init__()
        self.writer = writer

    async def respond(self, request: RespondInput, sink: TokenSink | None = None) -> RespondResult:
        return await self.writer.respond(request, sink)


async def test_answers_of_concurrent_runs_meet_in_one_batch(
    make_stack: StackFactory, vllm_engine: Engine, redis_url: str
) -> None:
    counting = MeteredEngine(vllm_engine)
    stack = await make_stack(
        policy=RulesWithModelAnswers(policy(counting, Tier.LIGHT)), inference_concurrency=8
    )
    questions = [f"Where is order {1001 + i % 3}? ({i})" for i in range(6)]
    results = await asyncio.gather(*(stack.ask(q, options={"use_cache": False}) for q in questions))
    report(f"6 concurrent runs: {counting.max_in_flight} answers in flight at once")
    assert counting.max_in_flight >= 4  # the worker let them in together; vLLM batched them
    client = aioredis.from_url(redis_url)
    try:
        for result in results:
            assert result.timings_ms.ttft is not None
            assert 0 < result.timings_ms.ttft <= result.timings_ms.total
            key = token_stream_key(result.workflow_id, result.run_id)
            view = await read_answer(client, key, idle_timeout_s=2.0)
            assert view.done and view.text.strip() == result.answer
    finally:
        await client.aclose()


async def test_a_run_through_the_real_cascade(
    make_stack: StackFactory, vllm_engine: Engine
) -> None:
    # One model plays both tiers; a threshold of 1.0 escalates every route it is not
    # certain of, so the run exercises the heavy path with real decoding.
    cascade = CascadePolicy(
        policy(vllm_engine, Tier.LIGHT, threshold=1.0), policy(vllm_engine, Tier.HEAVY)
    )
    stack = await make_stack(policy=cascade)
    result = await stack.ask("Where is order 1001?", options={"use_cache": False, "max_replans": 0})
    t = result.timings_ms
    report(
        f"cascade run: tier={result.route.tier.value} intent={result.route.intent} "
        f"steps={len(result.steps)} plan_error={result.plan_error and result.plan_error.type} "
        f"route {t.route:.0f} ms, plan {t.plan:.0f} ms, ttft {t.ttft or 0:.0f} ms, "
        f"total {t.total:.0f} ms"
    )
    assert result.route.tier in (Tier.LIGHT, Tier.HEAVY)
    if result.route.tier == Tier.HEAVY:
        assert result.route.reason.startswith("escalated to the heavy model")
        assert cascade.stats.escalated == 1
    else:
        assert result.route.confidence == 1.0
    assert result.steps or result.plan_error is not None  # it ran a plan or says why not
    assert result.timings_ms.ttft is not None
