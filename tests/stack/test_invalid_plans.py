"""Every kind of invalid plan is caught before anything runs, named, and sent back to planning."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from agentkeel.schemas.model_calls import JoinInput, JoinResult, PlanInput, PlanResult
from tests.support.agent_stack import StackFactory
from tests.support.fakes import FakeScriptedPolicy
from tests.support.history import tool_activities_scheduled
from tests.support.plans import INVALID_PLANS

GOOD = {"steps": [{"id": "s1", "tool": "search_kb", "args": {"query": "refund policy"}}]}


@pytest.mark.parametrize("kind", sorted(INVALID_PLANS))
async def test_invalid_plan_is_named_and_runs_nothing(make_stack: StackFactory, kind: str) -> None:
    policy = FakeScriptedPolicy([INVALID_PLANS[kind]])
    stack = await make_stack(policy=policy)
    handle = await stack.start("anything", options={"max_replans": 1})
    result = await handle.result()
    assert result.plan_error is not None
    assert result.plan_error.type == kind
    assert result.plan_error.non_retryable
    assert result.steps == []
    assert result.replans == 1, "join sends a rejected plan back to planning, within the bound"
    assert len(policy.plan_requests) == 2
    assert policy.plan_requests[1].plan_error is not None
    assert policy.plan_requests[1].plan_error.type == kind, "the planner sees why"
    assert kind in result.answer
    assert tool_activities_scheduled(await handle.fetch_history()) == []


async def test_replan_recovers_with_a_valid_plan(make_stack: StackFactory) -> None:
    stack = await make_stack(policy=FakeScriptedPolicy([INVALID_PLANS["UnknownTool"], GOOD]))
    result = await stack.ask("what is the refund policy")
    assert result.replans == 1
    assert result.plan_error is None
    assert [s.tool for s in result.steps] == ["search_kb"]
    assert result.steps[0].attempt == 1
    titles = [hit["title"] for hit in result.steps[0].output["hits"]]
    assert "Refund policy" in titles
    assert "help center" in result.answer


class SlowJoin(FakeScriptedPolicy):
    """The scripted planner, with a join that takes a model's time: when each was asked."""

    def __init__(self, plans: list[dict[str, Any]]) -> None:
        super().__init__(plans)
        self.joined_at = 0.0
        self.planned_at: list[float] = []

    async def join(self, request: JoinInput) -> JoinResult:
        await asyncio.sleep(0.5)
        self.joined_at = time.monotonic()
        return await super().join(request)

    async def plan(self, request: PlanInput) -> PlanResult:
        self.planned_at.append(time.monotonic())
        return await super().plan(request)


@pytest.mark.parametrize("ahead", [True, False])
async def test_the_next_plan_is_written_beside_the_join(
    make_stack: StackFactory, ahead: bool
) -> None:
    """`replan-ahead-v1`: the round's failure goes to the join and the planner at once, so a
    replan costs one model stage; `replan_ahead: false` asks the planner after the join."""
    policy = SlowJoin([INVALID_PLANS["UnknownTool"], GOOD])
    stack = await make_stack(policy=policy)
    result = await stack.ask("what is the refund policy", options={"replan_ahead": ahead})
    assert result.replans == 1 and [s.tool for s in result.steps] == ["search_kb"]
    assert len(policy.plan_requests) == 2, "one plan per round, either way"
    assert policy.plan_requests[1].plan_error is not None, "the planner sees why"
    if ahead:
        assert policy.planned_at[1] < policy.joined_at, "asked beside the join"
    else:
        assert policy.planned_at[1] > policy.joined_at, "asked once the join said replan"
