"""`bench.peers` runs every system for real: each makes exactly the tool calls of its shape.

Speed is not asserted here (that is the benchmark's job); what is, is that the peers are
not short-cut: a peer whose fake model skipped a tool, or called one with unresolved
arguments, would make the benchmark's figures meaningless.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

pytest.importorskip("pydantic_ai", reason="the bench extra is not installed (pydantic-ai-slim)")
pytest.importorskip("agents", reason="the bench extra is not installed (openai-agents)")
pytest.importorskip(
    "temporalio.openai_agents", reason="the bench extra is not installed (temporalio-openai-agents)"
)

from bench import peer_fakes as fakes
from bench.dag_shapes import SHAPES
from bench.peer_report import SYSTEMS, history_stats
from bench.peers import WrongToolCalls, check_calls, peer_stack, run_once
from bench.stack import StackConfig


def test_the_ideal_model_emits_one_round_per_level_with_resolved_arguments() -> None:
    diamond = SHAPES["diamond"]
    question = "bench diamond #1"
    first = fakes.next_round(question, {})
    assert [c.step_id for c in first] == ["a"]
    order = {"items": [{"sku": "SKU-7"}], "tracking_number": "TRK7"}
    second = fakes.next_round(question, {"a": order})
    assert {c.step_id: c.args for c in second} == {
        "b": {"sku": "SKU-7"},
        "c": {"tracking_number": "TRK7"},
    }
    assert [c.step_id for c in fakes.next_round(question, {"a": order, "b": {}})] == ["c"]
    everything = {s.id: {"product_name": "x", "query": "q"} for s in diamond.plan.steps}
    assert fakes.next_round(question, everything) == []
    assert [len(fakes.next_round(f"bench {w} #1", {})) for w in ("4-wide", "8-wide")] == [4, 8]


def test_a_run_with_a_missing_or_wrong_call_is_refused() -> None:
    fakes.TOOL_LOG.calls["w-short"] = [("get_order", {"order_id": 1001})]
    with pytest.raises(WrongToolCalls):
        check_calls(SHAPES["diamond"], "w-short")
    fakes.TOOL_LOG.calls["w-wide"] = [("search_kb", {"query": f"topic {i}"}) for i in range(4)]
    with pytest.raises(WrongToolCalls):  # topic 0..3, not 1..4
        check_calls(SHAPES["4-wide"], "w-wide")


@pytest.fixture
def quick_fakes() -> Iterator[None]:
    """Tools of 10 ms and no model time: the calls matter here, not the time."""
    before = (fakes.KNOBS.tool_s, fakes.KNOBS.model_s)
    fakes.KNOBS.tool_s, fakes.KNOBS.model_s = 0.01, 0.0
    yield
    fakes.KNOBS.tool_s, fakes.KNOBS.model_s = before


@pytest.mark.usefixtures("quick_fakes")
async def test_every_system_runs_the_diamond_with_its_tool_calls(
    admin_dsn: str, redis_url: str
) -> None:
    diamond = SHAPES["diamond"]
    config = StackConfig(admin_dsn=admin_dsn, redis_url=redis_url)
    async with peer_stack(config, sandbox_modes=[False, True]) as variants:
        assert {v.system for v in variants} == set(SYSTEMS)
        assert len(variants) == 7  # agentkeel, and each peer sandboxed and not
        for variant in variants:
            _, handle = await run_once(variant, diamond, 1)  # raises on wrong calls
            made = fakes.TOOL_LOG.of(handle.id)
            assert fakes.canonical(made) == fakes.expected_calls(diamond), variant.label
            assert ("search_kb", {"query": "Widget"}) in made  # d read b's output
            history = await history_stats(handle)
            # Every tool call is an activity of the run: on a queue, or a local one.
            tool_calls = history.activity_tasks + history.local_activities
            assert tool_calls >= diamond.steps, variant.label
