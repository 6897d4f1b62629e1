"""A planner whose plans come whole within the signal hold is read whole; a slow one streams
(`inference.llm.stream_pace`, used by `decoding.generate_plan`)."""

from __future__ import annotations

import time
from typing import Any

import pytest

from agentkeel.inference.llm.plan_stream import STEP_SINK
from agentkeel.inference.llm.policy import LlmPolicy
from agentkeel.inference.llm.stream_pace import EARLY_HOLD_S, StreamPace
from agentkeel.schemas.model_calls import PlanInput
from agentkeel.schemas.route import Route, Tier
from agentkeel.schemas.speculation import PredictedCall
from tests.support.fakes import FakeEngine

ORDER = {"id": "s1", "tool": "get_order", "args": {"order_id": 1001}}
PLAN = {"intent": "order_status", "rationale": "look it up", "steps": [ORDER]}


class Engine:
    """Stands for an engine: the pace is kept per engine object."""


def test_the_first_plan_streams_and_a_fast_one_turns_the_next_whole() -> None:
    pace, engine = StreamPace(hold_s=0.02), Engine()
    assert pace.streams(engine, "heavy")
    pace.streamed(engine, "heavy", first_text_s=0.001, text_span_s=0.005)
    assert not pace.streams(engine, "heavy")
    assert pace.streams(engine, "light")  # each tier its own pace
    assert pace.streams(Engine(), "heavy")  # and each engine


def test_a_slow_stream_keeps_streaming() -> None:
    pace, engine = StreamPace(hold_s=0.02), Engine()
    pace.streamed(engine, "heavy", first_text_s=0.001, text_span_s=0.5)
    assert pace.streams(engine, "heavy")


def test_a_whole_plan_that_took_the_hold_streams_the_next() -> None:
    pace, engine = StreamPace(hold_s=0.02), Engine()
    pace.streamed(engine, "heavy", first_text_s=0.001, text_span_s=0.001)
    pace.whole(engine, "heavy", 0.001)
    assert not pace.streams(engine, "heavy")
    pace.whole(engine, "heavy", 0.3)  # the server slowed down
    assert pace.streams(engine, "heavy")


def test_a_planner_slow_to_start_but_quick_to_write_stays_whole() -> None:
    """A whole plan's time holds the wait for the first token too: that wait, as the last
    stream measured it, is not counted against the hold."""
    pace, engine = StreamPace(hold_s=0.02, recheck_plans=100), Engine()
    pace.streamed(engine, "heavy", first_text_s=0.3, text_span_s=0.005)
    for _ in range(5):
        assert not pace.streams(engine, "heavy")
        pace.whole(engine, "heavy", 0.31)
    pace.whole(engine, "heavy", 0.35)  # 50 ms past the first text: it writes slowly now
    assert pace.streams(engine, "heavy")


def test_a_fast_planner_is_streamed_again_every_so_many_plans() -> None:
    pace, engine = StreamPace(hold_s=0.02, recheck_plans=3), Engine()
    pace.streamed(engine, "heavy", first_text_s=0.001, text_span_s=0.001)
    seen = []
    for _ in range(4):
        seen.append(pace.streams(engine, "heavy"))
        pace.whole(engine, "heavy", 0.001)
    assert seen == [False, False, False, True]


def test_a_fast_planner_is_streamed_again_after_a_while(monkeypatch: pytest.MonkeyPatch) -> None:
    pace, engine = StreamPace(hold_s=0.02, recheck_s=30.0), Engine()
    pace.streamed(engine, "heavy", first_text_s=0.001, text_span_s=0.001)
    later = time.monotonic() + 31.0
    monkeypatch.setattr(time, "monotonic", lambda: later)
    assert pace.streams(engine, "heavy")


class CountingEngine(FakeEngine):
    """FakeEngine that counts how each plan was asked for: streamed or whole."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__("pace", documents=[PLAN], streams_json=True, **kwargs)
        self.ways: list[str] = []

    async def generate(self, request: Any) -> Any:
        self.ways.append("whole")
        return await super().generate(request)

    def stream(self, request: Any) -> Any:
        self.ways.append("streamed")
        return super().stream(request)


async def _plan_three_times(engine: CountingEngine) -> list[PredictedCall]:
    sent: list[PredictedCall] = []

    async def sink(call: PredictedCall) -> None:
        sent.append(call)

    route = Route(intent="order_status", confidence=0.5, tier=Tier.LIGHT, reason="unsure")
    asked = PlanInput(question="where is order 1001", tenant="t", route=route)
    policy = LlmPolicy(engine, tier=Tier.HEAVY)
    token = STEP_SINK.set(sink)
    try:
        for _ in range(3):
            planned = await policy.plan(asked)
            assert planned.error is None
            assert [s.tool for s in planned.plan.steps] == ["get_order"]
    finally:
        STEP_SINK.reset(token)
    return sent


async def test_a_planner_that_writes_at_once_is_read_whole_after_its_first_plan() -> None:
    engine = CountingEngine()  # the whole document at once
    sent = await _plan_three_times(engine)
    assert engine.ways == ["streamed", "whole", "whole"]
    assert [c.tool for c in sent] == ["get_order"]  # only the streamed plan hands reads out


async def test_a_planner_slower_than_the_hold_streams_every_plan() -> None:
    engine = CountingEngine(delay_s=EARLY_HOLD_S * 3)  # pieces spread over 60 ms
    sent = await _plan_three_times(engine)
    assert engine.ways == ["streamed"] * 3
    assert [c.tool for c in sent] == ["get_order"] * 3
