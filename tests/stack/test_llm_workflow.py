"""The LLM policy and the cascade inside real runs: dev server, Postgres, Redis.

Only the models are scripted (`FakeEngine`); everything between them and the user is
real: the workflow, the inference activities and their token streams, the tools, the
run records. The same runs over real vLLM engines are in
`tests/fleet/test_llm_engines.py`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import asyncpg
import pytest
import redis.asyncio as aioredis
from temporalio.client import WorkflowFailureError
from temporalio.exceptions import ActivityError, ApplicationError

from agentkeel.client.token_follow import AnswerView, read_answer
from agentkeel.inference.engines.protocol import EngineRequestError, GenerateRequest, TokenDelta
from agentkeel.schemas.result import AgentResult, StepStatus
from agentkeel.schemas.route import Tier
from agentkeel.schemas.tokens import token_stream_key
from tests.support.agent_stack import StackFactory
from tests.support.fakes import HEAVY_ANSWER, LIGHT_ANSWER, STATUS_PLAN, FakeEngine, cascade


async def streamed(redis_url: str, result: AgentResult) -> AnswerView:
    client = aioredis.from_url(redis_url)
    try:
        key = token_stream_key(result.workflow_id, result.run_id)
        return await read_answer(client, key, idle_timeout_s=2.0)
    finally:
        await client.aclose()


async def test_an_unsure_route_is_planned_and_answered_by_the_heavy_model(
    make_stack: StackFactory, redis_url: str, database_url: str
) -> None:
    policy, light, heavy = cascade(
        {"refund": 0.55, "order_status": 0.45}, [{**STATUS_PLAN, "intent": "order_status"}]
    )
    stack = await make_stack(policy=policy, plan_ahead="off")  # the planner after the route
    result = await stack.ask("where's my parcel for 1001", options={"use_cache": False})

    assert result.route.tier == Tier.HEAVY
    assert result.route.intent == "order_status"
    assert result.route.overridden_intent == "refund"
    assert result.route.reason.startswith("escalated to the heavy model")
    assert [s.status for s in result.steps] == [StepStatus.SUCCEEDED] * 2
    assert result.answer == HEAVY_ANSWER
    assert len(light.prompts) == 1  # the route only: no light draft, no light answer
    assert len(heavy.prompts) == 2  # the plan and the answer
    assert "get_order" in heavy.prompts[1] and "tracking_number" in heavy.prompts[1]
    ttft = result.timings_ms.ttft
    assert ttft is not None and 0 < ttft <= result.timings_ms.total

    view = await streamed(redis_url, result)
    assert view.text == HEAVY_ANSWER and view.done

    conn = await asyncpg.connect(database_url)
    try:
        row = await conn.fetchrow(
            "SELECT tier, route_reason, overridden_intent, confidence, confidence_basis "
            "FROM agent_runs WHERE run_id = $1",
            result.run_id,
        )
    finally:
        await conn.close()
    assert row is not None
    assert (row["tier"], row["overridden_intent"]) == ("heavy", "refund")
    assert "escalated" in row["route_reason"]
    # The router's measured probability, recorded as one (a float4 column).
    assert row["confidence_basis"] == "logprobs"
    assert row["confidence"] == pytest.approx(result.route.confidence, abs=1e-6)
    assert (policy.stats.escalated, policy.stats.overridden) == (1, 1)


@pytest.mark.parametrize("plan_ahead", ["off", "auto"])
async def test_a_confident_route_runs_the_light_draft_and_skips_planning(
    make_stack: StackFactory, plan_ahead: str
) -> None:
    """After the route (`off`), or beside it (`auto`: this deployment is new to the
    forecast, so it plans ahead, but the router is asked first and is sure), the heavy
    planner never generates."""
    policy, _, heavy = cascade({"order_status": 0.93, "refund": 0.07}, [STATUS_PLAN])
    stack = await make_stack(policy=policy, plan_ahead=plan_ahead)
    result = await stack.ask("Where is order 1001?", options={"use_cache": False})
    assert result.route.tier == Tier.LIGHT
    assert result.route.confidence >= 0.7
    assert result.answer == LIGHT_ANSWER
    assert heavy.prompts == []
    assert result.timings_ms.plan == 0


async def test_invalid_plans_replan_with_the_error_then_fail_clearly(
    make_stack: StackFactory,
) -> None:
    bad = {
        "intent": "order_status",
        "rationale": "track a step that does not exist",
        "steps": [{"id": "s1", "tool": "track_shipment", "args": {"tracking_number": "$s7.x"}}],
    }
    policy, _, heavy = cascade({"uncertain": 0.9, "refund": 0.1}, [bad], plan_attempts=1)
    stack = await make_stack(policy=policy)
    result = await stack.ask("???", options={"use_cache": False, "max_replans": 2})
    assert result.plan_error is not None
    assert result.plan_error.type == "MissingReference"
    assert "s7" in result.plan_error.message
    assert result.replans == 2
    assert result.steps == []
    # Each replan's prompt carried the previous rejection.
    plan_prompts = [p for p in heavy.prompts if p.endswith("Plan JSON:")]
    assert len(plan_prompts) == 3
    assert all("MissingReference" in p for p in plan_prompts[1:])


class FlakyStreamEngine(FakeEngine):
    """Fails its first streamed answer after two pieces, like a worker lost mid-answer."""

    failures_left = 1

    async def stream(self, request: GenerateRequest) -> AsyncIterator[TokenDelta]:
        pieces = 0
        async for delta in super().stream(request):
            if self.failures_left and pieces == 2:
                self.failures_left -= 1
                raise RuntimeError("inference worker lost mid-answer")
            pieces += 1
            yield delta


async def test_a_retried_answer_is_not_shown_twice(
    make_stack: StackFactory, redis_url: str
) -> None:
    heavy = FlakyStreamEngine(
        "heavy-flaky", documents=[{**STATUS_PLAN, "intent": "order_status"}], answer=HEAVY_ANSWER
    )
    policy, _, _ = cascade({"uncertain": 0.9, "refund": 0.1}, [], heavy=heavy)
    stack = await make_stack(policy=policy)
    result = await stack.ask("where's 1001", options={"use_cache": False})
    assert result.answer == HEAVY_ANSWER
    view = await streamed(redis_url, result)
    assert view.attempt == 2
    assert view.text == HEAVY_ANSWER  # not "Order 1001Order 1001 is ..."


async def test_later_turns_of_a_conversation_see_the_earlier_ones(
    make_stack: StackFactory,
) -> None:
    policy, light, _ = cascade({"order_status": 0.93, "refund": 0.07}, [STATUS_PLAN])
    stack = await make_stack(policy=policy)
    first = await stack.ask(
        "Where is order 1001?", conversation_id="c-1", options={"use_cache": False}
    )
    second = await stack.start(
        "And when will it arrive?", conversation_id="c-1", options={"use_cache": False}
    )
    await second.result()
    route_prompts = [p for p in light.prompts if p.endswith("Intent:")]
    assert route_prompts[0].count("User:") == 1  # the first turn has no history
    # The router reads the earlier question, never the earlier answer: what a run may do is
    # decided from what the customer asked, not from text that tools or models wrote.
    assert "User: Where is order 1001?\n" in route_prompts[1]
    assert first.answer not in route_prompts[1]
    # Every prompt of the second run (route, draft plan, answer) saw the first turn...
    assert len(light.prompts) == 6
    assert all("Where is order 1001?" in p for p in light.prompts[3:])
    assert f"User: Where is order 1001?\nAgent: {first.answer}" in light.prompts[-1]
    # ...read by reference on the inference worker: not copied into workflow history.
    events = (await second.fetch_history()).events
    history = b"".join(event.SerializeToString() for event in events)
    assert b"And when will it arrive?" in history
    assert b"Where is order 1001?" not in history


class RefusingEngine(FakeEngine):
    """A server that refuses the answer's request (a prompt over its context length)."""

    async def stream(self, request: GenerateRequest) -> AsyncIterator[TokenDelta]:
        self.prompts.append(request.prompt)
        raise EngineRequestError("prompt is longer than the model's context")
        yield TokenDelta(text="")  # pragma: no cover - makes this an async generator


async def test_a_refused_model_request_fails_the_run_at_once_with_its_reason(
    make_stack: StackFactory,
) -> None:
    heavy = RefusingEngine("heavy-refusing", documents=[{**STATUS_PLAN, "intent": "order_status"}])
    policy, _, _ = cascade({"uncertain": 0.9, "refund": 0.1}, [], heavy=heavy)
    stack = await make_stack(policy=policy)
    with pytest.raises(WorkflowFailureError) as failure:
        await stack.ask("where's 1001", options={"use_cache": False})
    cause = failure.value.cause
    assert isinstance(cause, ActivityError)
    assert isinstance(cause.cause, ApplicationError)
    assert cause.cause.type == "ModelRequestRejected"
    assert "context" in cause.cause.message
    answers = [p for p in heavy.prompts if p.endswith("Agent:")]
    assert len(answers) == 1  # not retried: the same prompt would be refused again
