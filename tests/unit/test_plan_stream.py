"""The reads of a plan handed out as the planner writes it (`inference.llm.plan_stream`), and the
LLM policy's streamed plan decode that sends them (`decoding.generate_plan`)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agentkeel.inference.llm.plan_stream import MAX_TEXT_CHARS, STEP_SINK, StepReader
from agentkeel.inference.llm.policy import LlmPolicy
from agentkeel.schemas.model_calls import PlanInput
from agentkeel.schemas.route import Route, Tier
from agentkeel.schemas.speculation import PredictedCall
from tests.support.fakes import FakeEngine

ORDER = {"id": "s1", "tool": "get_order", "args": {"order_id": 1001}}
KB = {"id": "s3", "tool": "search_kb", "args": {"query": 'returns [policy] {"x"}'}}
REFUND = {"id": "s4", "tool": "create_refund", "args": {"order_id": 1001, "amount_cents": 500}}
NEEDS_S1 = {"id": "s2", "tool": "search_kb", "args": {"query": "$s1.status"}}


def _document(*steps: dict[str, Any], rationale: str = "look it up") -> str:
    return json.dumps({"intent": "order_status", "rationale": rationale, "steps": list(steps)})


def _fed(text: str, size: int) -> list[tuple[int, PredictedCall]]:
    """Every call handed out, with how much text had arrived when it was."""
    reader = StepReader()
    out: list[tuple[int, PredictedCall]] = []
    for at in range(0, len(text), size):
        out += [(at + size, call) for call in reader.feed(text[at : at + size])]
    return out


@pytest.mark.parametrize("size", [1, 3, 7, 1000])
def test_each_ready_read_comes_out_once_its_step_closes_whatever_the_pieces(size: int) -> None:
    text = _document(ORDER, NEEDS_S1, KB, REFUND, rationale='a "quoted" {rationale} [x]')
    out = _fed(text, size)

    assert [c for _, c in out] == [
        PredictedCall(tool="get_order", args={"order_id": 1001}, step="s1"),
        # It reads s1, which starts early too: the run resolves it once s1 returns.
        PredictedCall(tool="search_kb", args={"query": "$s1.status"}, step="s2", after=["s1"]),
        PredictedCall(tool="search_kb", args={"query": 'returns [policy] {"x"}'}, step="s3"),
    ]
    if size == 1:  # handed out at the closing brace of its step, not later
        first_closed = text.index(json.dumps(ORDER)) + len(json.dumps(ORDER))
        assert out[0][0] == first_closed


def test_steps_as_a_model_writes_them_name_their_tool_and_their_place() -> None:
    written = {
        "rationale": "r",
        "steps": [
            {"get_order": {"order_id": 1001}},
            {"search_kb": {"query": "$s1.status"}},
            {"search_kb": {"query": "returns"}, "optional": True},
            {"create_refund": {"order_id": 1001, "amount_cents": 500}},
            {"get_order": {"order_id": 1002}, "search_kb": {"query": "two tools"}},
        ],
    }
    assert [c for _, c in _fed(json.dumps(written), 5)] == [
        PredictedCall(tool="get_order", args={"order_id": 1001}, step="s1"),
        PredictedCall(tool="search_kb", args={"query": "$s1.status"}, step="s2", after=["s1"]),
        PredictedCall(tool="search_kb", args={"query": "returns"}, step="s3"),
    ]


def test_a_step_reading_one_that_did_not_start_early_waits_for_the_plan() -> None:
    written = {
        "rationale": "r",
        "steps": [
            {"create_refund": {"order_id": 1001, "amount_cents": 500}},
            {"search_kb": {"query": "$s1.refund_id"}},
            {"search_kb": {"query": "$s3.query"}},  # a step written later
            {"get_order": {"order_id": 7}, "after": ["s1"]},
        ],
    }
    assert _fed(json.dumps(written), 5) == []


def test_an_open_step_gives_nothing_until_it_closes() -> None:
    reader = StepReader()
    text = _document(ORDER)
    cut = text.index("1001") + 4  # the number itself may still be growing
    assert reader.feed(text[:cut]) == []
    assert reader.feed(text[cut:]) == [
        PredictedCall(tool="get_order", args={"order_id": 1001}, step="s1")
    ]


def test_references_effects_unknown_tools_and_bad_arguments_never_come_out() -> None:
    steps: list[dict[str, Any]] = [
        NEEDS_S1,
        REFUND,
        {"id": "s5", "tool": "drop_tables", "args": {}},
        {"id": "s6", "tool": "get_order", "args": {"order_id": "not a number"}},
        {"id": "s7", "tool": "get_order", "args": {"order_id": 7}, "after": ["s1"]},
        {"id": "s8", "tool": "search_kb", "args": {"query": "$item"}, "for_each": "$s1.items"},
        {
            "id": "s9",
            "tool": "get_order",
            "args": {"order_id": 8},
            "when": {"ref": "$s1.x", "is": "present"},
        },
        {"id": "s10", "tool": "wait", "args": {"seconds": 1}},
        {"id": "s11", "tool": "get_order", "args": {"order_id": 9}, "extra": True},
    ]
    assert _fed(_document(*steps), 5) == []


def test_a_literal_that_only_looks_like_money_is_no_reference() -> None:
    step = {"id": "s1", "tool": "search_kb", "args": {"query": "$20 credit"}}
    assert [c.args for _, c in _fed(_document(step), 4)] == [{"query": "$20 credit"}]


def test_duplicates_come_out_once_and_the_cap_holds() -> None:
    same = [{"id": f"s{i}", "tool": "get_order", "args": {"order_id": 1001}} for i in (1, 2)]
    many = [{"id": f"k{i}", "tool": "search_kb", "args": {"query": f"q{i}"}} for i in range(12)]
    calls = [c for _, c in _fed(_document(*same, *many), 9)]
    assert (calls[0].tool, calls[0].args) == ("get_order", {"order_id": 1001})
    assert len(calls) == 8  # MAX_SPECULATIVE_CALLS, duplicates not counted twice
    assert len({json.dumps(c.model_dump(), sort_keys=True) for c in calls}) == 8


@pytest.mark.parametrize(
    "text",
    [
        '[{"id": "s1", "tool": "get_order", "args": {"order_id": 1}}]',  # not an object
        '{"steps": [}{"id": "s1", "tool": "get_order", "args": {"order_id": 1}}]}',
        '{"rationale": {"steps": [{"id": "s1", "tool": "get_order", "args": {"order_id": 1}}]}}',
        '{"steps": [{"id": "s1", "tool": "get_order", "args": {"order_id": 1}]',  # unbalanced
        '{"steps": "[{\\"id\\": \\"s1\\", \\"tool\\": \\"get_order\\"}]"}',  # a string
        '{"steps": [], "steps2": [{"id": "s1", "tool": "get_order", "args": {"order_id": 1}}]}',
        "\x00\ufffd{{{{[[[[" + "]" * 50,
    ],
)
def test_malformed_or_hostile_text_gives_nothing(text: str) -> None:
    assert _fed(text, 4) == []


def test_text_past_the_ceiling_is_not_read() -> None:
    padding = "x" * MAX_TEXT_CHARS
    text = _document(ORDER, rationale=padding)
    assert _fed(text, 4096) == []


async def test_the_policy_streams_its_plan_and_sends_each_read_before_the_plan_ends() -> None:
    document = {"intent": "order_status", "rationale": "r", "steps": [ORDER, NEEDS_S1, KB]}
    engine = FakeEngine("streaming", documents=[document], streams_json=True)
    policy = LlmPolicy(engine, tier=Tier.HEAVY)
    sent: list[PredictedCall] = []
    done_when_sent: list[bool] = []

    async def sink(call: PredictedCall) -> None:
        sent.append(call)
        done_when_sent.append(engine.in_flight == 0)

    token = STEP_SINK.set(sink)
    try:
        planned = await policy.plan(_asked())
    finally:
        STEP_SINK.reset(token)
    assert [s.id for s in planned.plan.steps] == ["s1", "s2", "s3"]
    assert [c.tool for c in sent] == ["get_order", "search_kb", "search_kb"]
    assert [c.after for c in sent] == [[], ["s1"], []]
    assert done_when_sent[0] is False  # sent while the model was still decoding


async def test_an_engine_that_cannot_stream_plans_whole_and_sends_nothing() -> None:
    engine = FakeEngine(
        "whole", documents=[{"intent": "order_status", "rationale": "r", "steps": [ORDER]}]
    )
    sent: list[PredictedCall] = []

    async def sink(call: PredictedCall) -> None:
        sent.append(call)

    token = STEP_SINK.set(sink)
    try:
        planned = await LlmPolicy(engine, tier=Tier.HEAVY).plan(_asked())
    finally:
        STEP_SINK.reset(token)
    assert [s.tool for s in planned.plan.steps] == ["get_order"] and sent == []


async def test_a_streamed_document_off_its_schema_is_still_refused_whole() -> None:
    bad = json.dumps({"intent": "order_status", "rationale": "r", "steps": [ORDER], "x": 1})
    engine = FakeEngine("streaming", documents=[bad], streams_json=True)
    sent: list[PredictedCall] = []

    async def sink(call: PredictedCall) -> None:
        sent.append(call)

    token = STEP_SINK.set(sink)
    try:
        planned = await LlmPolicy(engine, tier=Tier.HEAVY, plan_attempts=1).plan(_asked())
    finally:
        STEP_SINK.reset(token)
    # The read went out as written; the plan is rejected whole (the run cancels the read).
    assert [c.tool for c in sent] == ["get_order"]
    assert planned.error is not None and not planned.plan.steps


def _asked() -> PlanInput:
    route = Route(intent="order_status", confidence=0.5, tier=Tier.LIGHT, reason="unsure")
    return PlanInput(question="where is order 1001", tenant="t", route=route)


async def test_the_openai_engine_streams_a_plan_under_its_schema() -> None:
    """The real engine and policy against the token-timed server (a fake at the model
    boundary, in this process): the first read arrives while the plan is still decoding."""
    pytest.importorskip("openai", reason="openai is not installed (the llm-cpu or gpu extra)")
    import time

    from agentkeel.inference.engines.openai_compat import OpenAICompatEngine
    from bench.ideal_model import IdealShapeModel
    from bench.peer_cases import Case
    from bench.token_server import Speed, serving

    async with serving(IdealShapeModel(), Speed("test", 0.0, 0.005)) as (url, server):
        engine = OpenAICompatEngine(base_url=url, model="ideal", api="chat")
        await engine.start()
        policy = LlmPolicy(engine, tier=Tier.HEAVY)
        case = Case("diamond", 1, named=True)
        sent: list[tuple[float, PredictedCall]] = []

        async def sink(call: PredictedCall) -> None:
            sent.append((time.perf_counter(), call))

        token = STEP_SINK.set(sink)
        try:
            planned = await policy.plan(_asked().model_copy(update={"question": case.question}))
        finally:
            STEP_SINK.reset(token)
            await engine.close()
        done = time.perf_counter()
    assert planned.error is None and len(planned.plan.steps) == 4
    assert sent[0][1] == PredictedCall(
        tool="get_order", args={"order_id": case.order_ids[0]}, step="s1"
    )
    assert all(c.after for _, c in sent[1:])  # the others read s1, and wait for it
    assert done - sent[0][0] > 0.05  # the rest of the plan was still to come
    assert server.log.requests == 1
