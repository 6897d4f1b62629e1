"""Recorded histories must replay with the current code, so a change can't break runs in flight.

To re-record after an intended, versioned change (gate it with `workflow.patched()` first):
    AGENTKEEL_RECORD_HISTORIES=1 pytest tests/test_replay.py
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest
from temporalio.client import WorkflowHistory
from temporalio.worker import Replayer

from schemas import names
from schemas.actor import Actor, Role
from schemas.approvals import ApprovalDecision
from tests.conftest import AgentStack, StackFactory
from tests.fakes import FakeScriptedPolicy
from tests.test_authority import until_awaiting
from tests.test_invalid_plans import INVALID_PLANS
from workers.temporal_client import agentkeel_plugins
from workflows.agent import AgentWorkflow
from workflows.dag.fan_out import FanOutWorkflow

HISTORIES = Path(__file__).parent / "histories"
RECORD = os.environ.get("AGENTKEEL_RECORD_HISTORIES") == "1"

SCENARIOS = {
    "dependent_steps": "Where is order 1001?",
    "runtime_expansion": "Can order 1002 be fulfilled from stock?",
    "parallel_branches": "Where is order 1003, and what is your return policy?",
    "failed_step_skips": "Where is order 999999?",
    "unsure_route_plans": "I have a problem with something I got",
}


@pytest.mark.skipif(not RECORD, reason="set AGENTKEEL_RECORD_HISTORIES=1 to re-record")
async def test_record_histories(stack: AgentStack, make_stack: StackFactory) -> None:
    HISTORIES.mkdir(exist_ok=True)
    for name, question in SCENARIOS.items():
        handle = await stack.start(question)
        await handle.result()
        await _save(name, await handle.fetch_history())
    cached = await stack.start(SCENARIOS["parallel_branches"].split(", and ")[1])
    await cached.result()
    again = await stack.start(SCENARIOS["parallel_branches"].split(", and ")[1])
    await again.result()
    await _save("cache_hit", await again.fetch_history())
    replanning = await make_stack(
        policy=FakeScriptedPolicy(
            [
                INVALID_PLANS["UnknownTool"],
                {"steps": [{"id": "s1", "tool": "search_kb", "args": {"query": "refunds"}}]},
            ]
        )
    )
    handle = await replanning.start("scripted replan")
    await handle.result()
    await _save("replan_after_invalid_plan", await handle.fetch_history())


@pytest.mark.skipif(not RECORD, reason="set AGENTKEEL_RECORD_HISTORIES=1 to re-record")
async def test_record_authority_histories(stack: AgentStack) -> None:
    """Runs under `authority-v1`: an approved refund, and a customer refused another's order."""
    handle = await stack.start(
        "Please refund $150.00 for order 1002, it arrived damaged",
        actor=Actor(role=Role.STAFF, name="ann"),
    )
    await until_awaiting(handle)
    await handle.execute_update(
        names.APPROVE_UPDATE, ApprovalDecision(approved=True, approver="bob", reason="ok")
    )
    await handle.result()
    await _save("approved_refund", await handle.fetch_history())
    handle = await stack.start(
        "Where is order 1001?", actor=Actor(role=Role.CUSTOMER, customer_id=2)
    )
    await handle.result()
    await _save("customer_refused", await handle.fetch_history())


async def _save(name: str, history: WorkflowHistory) -> None:
    (HISTORIES / f"{name}.json").write_text(history.to_json())


def _recorded() -> list[Path]:
    return sorted(HISTORIES.glob("*.json"))


def test_histories_are_committed() -> None:
    assert len(_recorded()) >= 14, "recorded histories are missing from tests/histories"


@pytest.mark.parametrize("path", _recorded(), ids=lambda p: p.stem)
async def test_recorded_history_replays(path: Path) -> None:
    history = WorkflowHistory.from_json(path.stem, await asyncio.to_thread(path.read_text))
    replayer = Replayer(workflows=[AgentWorkflow, FanOutWorkflow], plugins=agentkeel_plugins())
    result = await replayer.replay_workflow(history, raise_on_replay_failure=False)
    assert result.replay_failure is None, f"{path.name}: {result.replay_failure}"
