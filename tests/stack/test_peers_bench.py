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
from bench.peers import peer_stack, run_once
from bench.stack import StackConfig


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
