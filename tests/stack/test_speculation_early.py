"""Reads a question predicts start at the run's first moment, beside the router and the
planner, on the real stack (dev server, Postgres, Redis, the carrier service; only the
models are scripted, `FakeEngine` with a latency). The plan adopts the ones it makes,
whichever tier wrote it; an LLM planner is given them as steps it builds on."""

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


async def test_the_planner_is_given_the_read_it_builds_on_and_the_bypassed_cache_predicts_none(
    make_stack: StackFactory,
) -> None:
    # The planner writes a search of the order's own status, told that the read of order
    # 1001 is already its step p1 (`inference.llm.given_reads`).
    steps = [{"id": "s1", "tool": "search_kb", "args": {"query": "$p1.status"}}]
    stack = await make_stack(policy=confident(steps, delay_s=0.1))
    result = await stack.ask(_question())

    assert [(s.id, s.tool, s.status) for s in result.steps] == [
        ("p1", "get_order", StepStatus.SUCCEEDED),
        ("s1", "search_kb", StepStatus.SUCCEEDED),
    ]
    assert result.steps[0].speculative  # the read started at once served the given step
    assert result.speculation is not None
    [call] = result.speculation.calls
    assert (call.tool, call.args, call.outcome, call.step_id) == (
        "get_order",
        {"order_id": 1001},
        SpeculationOutcome.USED,
        "p1",
    )
    # A confident route and no cache lookup: nothing is predicted, nothing starts, and
    # the planner is given nothing (its reference to p1 names no step: it is refused).
    bypassed = await stack.ask(_question(), options={"use_cache": False})
    assert bypassed.speculation is None
    assert "p1" not in {s.id for s in bypassed.steps}
