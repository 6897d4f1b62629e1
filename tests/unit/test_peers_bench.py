"""`bench.peers`' fake models and its check of their calls: each peer must make exactly the
tool calls of its shape, with resolved arguments, or the run is refused."""

from __future__ import annotations

import pytest

pytest.importorskip("pydantic_ai", reason="the bench extra is not installed (pydantic-ai-slim)")
pytest.importorskip("agents", reason="the bench extra is not installed (openai-agents)")
pytest.importorskip(
    "temporalio.openai_agents", reason="the bench extra is not installed (temporalio-openai-agents)"
)

from bench import peer_fakes as fakes
from bench.dag_shapes import SHAPES
from bench.peers import WrongToolCalls, check_calls


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
