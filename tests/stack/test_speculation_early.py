"""Reads a question predicts start at the run's first moment, beside the router and the
planner, on the real stack (dev server, Postgres, Redis, the carrier service; only the
models are scripted, `FakeEngine` with a latency). The plan adopts the ones it makes,
whichever tier wrote it, and the rest are cancelled and reported."""

from __future__ import annotations

import uuid

from agentkeel.schemas.result import StepStatus
from agentkeel.schemas.route import Tier
from agentkeel.schemas.speculation import SpeculationOutcome
from tests.support.agent_stack import StackFactory
from tests.support.speculation import confident


def _question() -> str:
    # A question of its own per test: the path cache is on and must miss.
    return f"where is order 1001 (ticket {uuid.uuid4().hex[:6]})"


async def test_a_confident_routes_plan_adopts_the_read_started_at_once(
    make_stack: StackFactory,
) -> None:
    steps = [{"id": "s1", "tool": "get_order", "args": {"order_id": 1001}}]
    stack = await make_stack(policy=confident(steps, delay_s=0.3))
    result = await stack.ask(_question())

    assert result.route.tier == Tier.LIGHT
    assert [s.status for s in result.steps] == [StepStatus.SUCCEEDED]
    assert result.steps[0].speculative
    assert result.speculation is not None
    assert [(c.tool, c.outcome) for c in result.speculation.calls] == [
        ("get_order", SpeculationOutcome.USED)
    ]
    # The read ran while the router decided: its time is saved, not spent after it.
    assert result.timings_ms.speculation_saved > 0


async def test_a_read_no_plan_makes_is_cancelled_and_the_bypassed_cache_predicts_none(
    make_stack: StackFactory,
) -> None:
    steps = [{"id": "s1", "tool": "search_kb", "args": {"query": "shipping times"}}]
    stack = await make_stack(policy=confident(steps, delay_s=0.1))
    result = await stack.ask(_question())

    assert [s.tool for s in result.steps] == ["search_kb"]
    assert result.speculation is not None
    [call] = result.speculation.calls
    assert (call.tool, call.args, call.outcome) == (
        "get_order",
        {"order_id": 1001},
        SpeculationOutcome.UNUSED,
    )
    # A confident route and no cache lookup: nothing is predicted, nothing starts.
    bypassed = await stack.ask(_question(), options={"use_cache": False})
    assert bypassed.speculation is None
