"""Recording the replay histories (`tests/histories/`) on the real stack (what a release
records when its patch is held: `test_held_patches.py`).

To re-record after an intended, versioned change (gate it with `workflow.patched()` first):
    AGENTKEEL_RECORD_HISTORIES=1 pytest tests/stack/test_record_histories.py

Recordings go to a folder named by the current release id (`workflows.release`), so
re-recording never overwrites the histories of earlier code: the top-level files were
recorded before `release-2026-12` (one marker per change), its folder's after it, each
other change's folder under `release-2026-12` with that change's own marker,
`release-2026-12-06`'s under the release that gathers them all (one marker a run),
`release-2026-12-07`'s under the third release (one marker a run, its own),
`release-2026-12-07b`'s under the fourth and `release-2026-12-08`'s under the fifth.
"""

from __future__ import annotations

import asyncio
import os

import asyncpg
import pytest
from temporalio.client import WorkflowFailureError, WorkflowHistory

from agentkeel.examples.shop.demo_watch import ship_order
from agentkeel.schemas import names
from agentkeel.schemas.actor import Actor
from agentkeel.schemas.approvals import ApprovalDecision
from agentkeel.schemas.progress import RunProgress
from agentkeel.workflows.dag.fan_out import child_workflow_id
from agentkeel.workflows.release import (
    FIFTH_RELEASE_PATCH,
)
from tests.support.agent_stack import AgentStack, StackFactory
from tests.support.fakes import FakeScriptedPolicy
from tests.support.paths import HISTORIES
from tests.support.plans import INVALID_PLANS, every_order_plan, list_orders_of
from tests.support.refunds import until_awaiting

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
        actor=Actor(role="staff", name="ann"),
    )
    await until_awaiting(handle)
    await handle.execute_update(
        names.APPROVE_UPDATE,
        ApprovalDecision(approved=True, approver="bob", reason="ok", approval_id=1),
    )
    await handle.result()
    await _save("approved_refund", await handle.fetch_history())
    handle = await stack.start("Where is order 1001?", actor=Actor(role="customer", subject=str(2)))
    await handle.result()
    await _save("customer_refused", await handle.fetch_history())


@pytest.mark.skipif(not RECORD, reason="set AGENTKEEL_RECORD_HISTORIES=1 to re-record")
async def test_record_long_running_histories(
    stack: AgentStack, make_stack: StackFactory, orders_db: asyncpg.Pool
) -> None:
    """A wait, a watch that continues as new (both runs of the chain), a 400-call fan-out
    in children (the run and one part)."""
    handle = await stack.start("check order 1001 again in 1 second")
    await handle.result()
    await _save("wait_then_lookup", await handle.fetch_history())
    handle = await stack.start(
        "Tell me when order 1002 ships", options={"watch_every_s": 1, "continue_after_runs": 2}
    )
    first_run = handle.result_run_id
    for _ in range(60):  # until the chain has continued once
        await asyncio.sleep(0.5)
        if (await handle.query(names.PROGRESS_QUERY, result_type=RunProgress)).continued:
            break
    await ship_order(orders_db, 1002)
    order_ids = [
        r["order_id"]
        for r in await orders_db.fetch("SELECT order_id FROM orders ORDER BY order_id LIMIT 400")
    ]
    result = await handle.result()
    first = stack.client.get_workflow_handle(handle.id, run_id=first_run)
    await _save("watch_continued_as_new", await first.fetch_history())
    last = stack.client.get_workflow_handle(handle.id, run_id=result.run_id)
    await _save("watch_fired_after_continuing", await last.fetch_history())
    fan_out = await make_stack(
        policy=FakeScriptedPolicy([every_order_plan()]),
        replace_activities=[list_orders_of(order_ids)],
    )
    handle = await fan_out.start(
        "every order", options={"max_fan_out": 400, "max_tool_calls": 401, "max_concurrency": 32}
    )
    done = await handle.result()
    await _save("fan_out_in_children", await handle.fetch_history())
    child = fan_out.client.get_workflow_handle(child_workflow_id(done.run_id, "s2", 0))
    await _save("fan_out_part", await child.fetch_history())


@pytest.mark.skipif(not RECORD, reason="set AGENTKEEL_RECORD_HISTORIES=1 to re-record")
async def test_record_local_policy_histories(stack: AgentStack) -> None:
    """Runs under `local-policy-v1`: the rules route, plan and answer on the CPU worker."""
    for name, question in (
        ("local_policy_confident", "Where is order 1001?"),
        ("local_policy_unsure", "I have a problem with something I got"),
        ("local_policy_failed_step", "Where is order 999999?"),
    ):
        handle = await stack.start(question)
        await handle.result()
        await _save(name, await handle.fetch_history())


@pytest.mark.skipif(not RECORD, reason="set AGENTKEEL_RECORD_HISTORIES=1 to re-record")
async def test_record_speculation_deadline_histories(make_stack: StackFactory) -> None:
    """Runs under `speculation-v1` and `deadline-v1`: a speculative read used, one cancelled
    when the plan arrived, a deadline met by trades, a deadline refused at once."""
    from agentkeel.examples.shop.carrier import serving
    from tests.support.speculation import KB_ONLY, QUESTION, STEPS, StandInOrders, cascade

    no_cache = {"use_cache": False}
    used = await make_stack(policy=cascade(STEPS, heavy_s=0.3))
    handle = await used.start(QUESTION, options=no_cache)
    await handle.result()
    await _save("speculation_used", await handle.fetch_history())
    slow_orders = StandInOrders(hold_s=5.0)  # still running when the plan arrives
    unused = await make_stack(
        policy=cascade(KB_ONLY, heavy_s=0.3), replace_activities=[slow_orders.get_order]
    )
    handle = await unused.start(QUESTION, options=no_cache)
    await handle.result()
    await _save("speculation_unused_cancelled", await handle.fetch_history())
    async with serving(400) as slow_carrier:
        timed = await make_stack(policy=cascade(STEPS, heavy_s=0.5), carrier_url=slow_carrier)
        await timed.ask(QUESTION, options=no_cache)  # what the next runs plan from
        handle = await timed.start(QUESTION, options={**no_cache, "deadline_ms": 500})
        await handle.result()
        await _save("deadline_trades", await handle.fetch_history())
        handle = await timed.start(QUESTION, options={**no_cache, "deadline_ms": 100})
        await handle.result()
        await _save("deadline_refused", await handle.fetch_history())


@pytest.mark.skipif(not RECORD, reason="set AGENTKEEL_RECORD_HISTORIES=1 to re-record")
async def test_record_early_speculation_histories(make_stack: StackFactory) -> None:
    """Runs under `early-speculation-v1`: the read the question names started at the run's
    first moment and taken by a confident route's plan, and one no plan made, cancelled."""
    from tests.support.speculation import KB_ONLY, STEPS, confident

    for name, steps, here in (
        ("early_speculation_used", STEPS[:1], False),
        ("early_speculation_unused", KB_ONLY, False),
        # `local-speculation-v1`: the policy's steps served by the CPU worker, the read
        # started beside the route as a local activity.
        ("local_speculation_used", STEPS[:1], True),
        ("local_speculation_unused", KB_ONLY, True),
    ):
        stack = await make_stack(policy=confident(steps, delay_s=0.2), policy_here=here)
        handle = await stack.start(f"where is order 1001 ({name})")
        await handle.result()
        await _save(name, await handle.fetch_history())


@pytest.mark.skipif(not RECORD, reason="set AGENTKEEL_RECORD_HISTORIES=1 to re-record")
async def test_record_plan_stream_histories(make_stack: StackFactory) -> None:
    """A run under `plan-stream-v1`: reads started as the planner wrote them, the one the
    final plan makes adopted, the one only a rejected decode made cancelled."""
    from tests.support.speculation import streaming_cascade

    stack = await make_stack(policy=streaming_cascade())
    handle = await stack.start("my parcel has not come, what now", options={"use_cache": False})
    await handle.result()
    await _save("plan_stream_adopted", await handle.fetch_history())


@pytest.mark.skipif(not RECORD, reason="set AGENTKEEL_RECORD_HISTORIES=1 to re-record")
async def test_record_run_budget_history(make_stack: StackFactory) -> None:
    """A run under `run-budget-v1`: past its degrade point once routed, it plans on the
    light tier, then stops with `BudgetExhausted` before its answer."""
    from tests.support.shop_model import ORDER_QUESTION, budget_past_the_route, shop_cascade

    async with shop_cascade() as (policy, _):
        stack = await make_stack(policy=policy, plan_ahead="off")
        probe = await stack.ask(ORDER_QUESTION, options={"use_cache": False})
        budget = budget_past_the_route(probe)
        handle = await stack.start(ORDER_QUESTION, options={"use_cache": False, "budget": budget})
        with pytest.raises(WorkflowFailureError):
            await handle.result()
    await _save("run_budget_stopped", await handle.fetch_history())


@pytest.mark.skipif(not RECORD, reason="set AGENTKEEL_RECORD_HISTORIES=1 to re-record")
async def test_record_policy_offer_history(make_stack: StackFactory) -> None:
    """A run under `policy-offer-v1`: its lookup says the CPU worker serves no policy step,
    so the route goes to the inference pool with no offer first; its answer announced."""
    from tests.support.fakes import STATUS_PLAN, cascade

    policy, _light, _heavy = cascade(
        {"refund": 0.55, "order_status": 0.45}, [{**STATUS_PLAN, "intent": "order_status"}]
    )
    stack = await make_stack(policy=policy)
    handle = await stack.start("where's my parcel for 1001")
    await handle.result()
    await _save("model_route_unoffered", await handle.fetch_history())


@pytest.mark.skipif(not RECORD, reason="set AGENTKEEL_RECORD_HISTORIES=1 to re-record")
async def test_record_roles_in_claim_history(
    make_stack: StackFactory, db: asyncpg.Pool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A staff refund refused by the claim under `roles-in-claim-v1` (the tool given roles
    for this run only): it replays under the shop's catalog, which gives it none."""
    from tests.stack.test_roles_in_claim import refused_by_roles

    history = await refused_by_roles(await make_stack(), db, monkeypatch)
    await _save("role_refused_by_the_claim", history)


@pytest.mark.skipif(not RECORD, reason="set AGENTKEEL_RECORD_HISTORIES=1 to re-record")
async def test_record_amended_history(make_stack: StackFactory, db: asyncpg.Pool) -> None:
    """A refund of the amount its request corrected, refused under `provenance-asked-v3`."""
    from tests.stack.test_provenance_asked import corrected_refund_history

    history = await corrected_refund_history(make_stack, db)
    await _save("corrected_amount_refused", history)


async def _save(name: str, history: WorkflowHistory, folder: str = FIFTH_RELEASE_PATCH) -> None:
    into = HISTORIES / folder
    into.mkdir(parents=True, exist_ok=True)
    (into / f"{name}.json").write_text(history.to_json())
