"""A tool's `roles` are decided by the ledger's claim, so the decision is in the run's
history: a refused role is recorded and nothing is claimed, and a history recorded under
one catalog replays under a catalog whose roles changed since (`roles-in-claim-v1`).

Real stack (dev server, Postgres, Redis, the rules policy). The shop's tools declare no
roles, so the test gives `create_refund` some in this process's catalog, as an MCP
server's `roles` would."""

from __future__ import annotations

import dataclasses

import asyncpg
import pytest
from temporalio.client import WorkflowHistory
from temporalio.worker import Replayer

from agentkeel.schemas import errors
from agentkeel.schemas.result import StepStatus
from agentkeel.schemas.tools import catalog
from agentkeel.workers.temporal_client import agentkeel_plugins
from agentkeel.workflows.agent import AgentWorkflow
from agentkeel.workflows.fan_out_part import FanOutWorkflow
from tests.support.agent_stack import AgentStack, StackFactory
from tests.support.refunds import refundable_order, refunds_of, staff, step_of


def _with_roles(monkeypatch: pytest.MonkeyPatch, tool: str, roles: tuple[str, ...]) -> None:
    tools = catalog._catalog().tools
    monkeypatch.setitem(tools, tool, dataclasses.replace(tools[tool], roles=roles))


async def refused_by_roles(
    stack: AgentStack, db: asyncpg.Pool, monkeypatch: pytest.MonkeyPatch
) -> WorkflowHistory:
    """A staff refund of $5 with `create_refund` allowing customers only: refused by the
    claim, nothing claimed or made; its history."""
    order_id, _ = await refundable_order(db, at_least_cents=500)
    _with_roles(monkeypatch, "create_refund", ("customer",))
    result = await stack.ask(
        f"Please refund $5.00 for order {order_id}, it arrived damaged",
        actor=staff("ann"),
        options={"use_cache": False},
    )
    refund = step_of(result, "create_refund")
    assert refund.status == StepStatus.FAILED and refund.error is not None
    assert refund.error.type == errors.NOT_AUTHORIZED
    assert "staff ann may not call create_refund (it allows customer)" in refund.error.message
    assert await refunds_of(db, order_id) == []
    rows = await db.fetch(
        "SELECT status, error_type, effect_key FROM agent_effects WHERE workflow_id = $1",
        result.workflow_id,
    )
    # The refusal's audit row only: no key held, nothing claimed or counted.
    assert [tuple(r) for r in rows] == [("refused", errors.NOT_AUTHORIZED, None)]
    return await stack.client.get_workflow_handle(result.workflow_id).fetch_history()


async def test_a_role_refused_by_the_claim_replays_under_a_widened_catalog(
    make_stack: StackFactory, db: asyncpg.Pool, monkeypatch: pytest.MonkeyPatch
) -> None:
    history = await refused_by_roles(await make_stack(), db, monkeypatch)
    replayer = Replayer(workflows=[AgentWorkflow, FanOutWorkflow], plugins=agentkeel_plugins())
    for widened in (("customer", "staff"), ("staff",)):
        # Staff may now refund: a run that read the roles in workflow code would take
        # another branch here (the claim, the call) and fail its replay.
        _with_roles(monkeypatch, "create_refund", widened)
        replayed = await replayer.replay_workflow(history, raise_on_replay_failure=False)
        assert replayed.replay_failure is None, replayed.replay_failure
