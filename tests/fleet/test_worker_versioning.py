"""Temporal worker versioning, opt in (`workers.versioning`): a CPU and an inference worker
process of one release poll as one worker deployment version; once the operator makes it
current, a new run is served by that version, its model activities included, and its
history says which version and behaviour it ran under. A run in flight (waiting for an
approval) moves to the next release once that is made current, with the old release's
workers still polling (`auto_upgrade`), and completes there.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import asyncpg
import pytest
from temporalio.api.enums.v1 import RoutingConfigUpdateState, VersioningBehavior
from temporalio.api.workflowservice.v1 import (
    DescribeWorkerDeploymentRequest,
    SetWorkerDeploymentCurrentVersionRequest,
)
from temporalio.client import Client, WorkflowHandle
from temporalio.service import RPCError

from agentkeel.cli.stack.fleet import WorkerFleet
from agentkeel.client.approvals import decide_approval
from agentkeel.schemas.actor import Actor
from agentkeel.schemas.approvals import ApprovalDecision
from agentkeel.schemas.request import AgentRequest
from agentkeel.workflows.agent import AgentWorkflow
from tests.support.fleet_stack import fleet_env, fleet_settings, identities
from tests.support.history import awaiting_approval
from tests.support.pg import hand_shop_to

STAFF = Actor(role="staff", name="versioned")
BUILD_ID = "release-1"
NEXT_BUILD_ID = "release-2"
CURRENT_S = 60.0
"""How long the new version may take to be known to the server once its workers poll."""
ROUTING_DONE = RoutingConfigUpdateState.ROUTING_CONFIG_UPDATE_STATE_COMPLETED


@pytest.fixture
async def versioned(
    client: Client, database_url: str, redis_url: str, carrier_url: str, tmp_path: Path
) -> AsyncIterator[WorkerFleet]:
    settings = fleet_settings(
        client,
        database_url,
        redis_url,
        "versioned",
        local_policy="off",  # the policy steps go to the inference worker: one version
        semantic_cache="off",
        worker_deployment=f"agentkeel-{uuid.uuid4().hex[:8]}",
        worker_build_id=BUILD_ID,
    )
    fleet = WorkerFleet(settings, fleet_env(settings, carrier_url), tmp_path)
    fleet.start("cpu", 1)
    fleet.start("inference", 1)
    try:
        await fleet.wait_polling(client)
        yield fleet
    finally:
        fleet.stop()


async def _make_current(client: Client, deployment: str, build_id: str = BUILD_ID) -> None:
    """What `temporal worker deployment set-current-version` does, retried until the server
    knows the version its workers poll as; then until every task queue of the deployment
    routes by it. The call returns before that: for a moment after it, a task may still go
    to the version that was current (seen here: an approval taken by the old release)."""
    deadline = time.monotonic() + CURRENT_S
    while True:
        try:
            await client.workflow_service.set_worker_deployment_current_version(
                SetWorkerDeploymentCurrentVersionRequest(
                    namespace=client.namespace, deployment_name=deployment, build_id=build_id
                )
            )
            break
        except Exception:
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.5)
    while True:
        info = (
            await client.workflow_service.describe_worker_deployment(
                DescribeWorkerDeploymentRequest(
                    namespace=client.namespace, deployment_name=deployment
                )
            )
        ).worker_deployment_info
        current = info.routing_config.current_deployment_version.build_id
        if current == build_id and info.routing_config_update_state == ROUTING_DONE:
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"{deployment}/{build_id} never routed: {info}")
        await asyncio.sleep(0.2)


async def test_a_run_is_served_by_the_current_version_of_a_deployment(
    client: Client, versioned: WorkerFleet, database_url: str
) -> None:
    settings = versioned.settings
    await _make_current(client, settings.worker_deployment)
    tenant = f"tenant-{settings.task_queue}"
    await hand_shop_to(database_url, tenant)
    handle = await client.start_workflow(
        AgentWorkflow.run,
        AgentRequest(question="Where is order 1001?", tenant=tenant, actor=STAFF),
        id=f"versioned-{uuid.uuid4().hex[:12]}",
        task_queue=settings.task_queue,
    )
    result = await asyncio.wait_for(handle.result(), 120)
    assert result.answer and "1001" in result.answer
    info = (await handle.describe()).raw_description.workflow_execution_info.versioning_info
    assert info.deployment_version.deployment_name == settings.worker_deployment
    assert info.deployment_version.build_id == BUILD_ID
    assert info.behavior == VersioningBehavior.VERSIONING_BEHAVIOR_AUTO_UPGRADE
    served_by = {versioned.owner(i) for i in await identities(handle)}
    assert served_by == set(versioned.workers), "both workers of the version took part"


async def _refundable_order(database_url: str, at_least_cents: int) -> int:
    conn = await asyncpg.connect(database_url)
    try:
        order_id: int | None = await conn.fetchval(
            """
            SELECT o.order_id FROM orders o WHERE o.status <> 'cancelled'
              AND o.total_cents - (SELECT coalesce(sum(amount_cents), 0) FROM refunds r
                                   WHERE r.order_id = o.order_id) >= $1
            ORDER BY o.order_id LIMIT 1
            """,
            at_least_cents,
        )
    finally:
        await conn.close()
    assert order_id is not None
    return order_id


async def _identities_after_approval(handle: WorkflowHandle[Any, Any]) -> list[str]:
    """Who took each workflow and activity task once the approval update was accepted."""
    found, accepted = [], False
    async for event in handle.fetch_history_events():
        accepted = accepted or event.HasField("workflow_execution_update_accepted_event_attributes")
        for attributes in (
            event.workflow_task_started_event_attributes,
            event.activity_task_started_event_attributes,
        ):
            if accepted and attributes.identity:
                found.append(attributes.identity)
    return found


async def _failed_tasks(handle: WorkflowHandle[Any, Any]) -> list[str]:
    """Each failed or timed-out workflow task of the run: who took it and why."""
    found = []
    async for event in handle.fetch_history_events():
        if event.HasField("workflow_task_failed_event_attributes"):
            failed = event.workflow_task_failed_event_attributes
            found.append(f"{failed.identity}: {failed.cause} {failed.failure.message}")
        elif event.HasField("workflow_task_timed_out_event_attributes"):
            found.append(f"timed out: {event.workflow_task_timed_out_event_attributes}")
    return found


async def test_a_run_in_flight_moves_to_the_next_version_and_completes_there(
    client: Client, versioned: WorkerFleet, database_url: str, carrier_url: str, tmp_path: Path
) -> None:
    first = versioned.settings
    await _make_current(client, first.worker_deployment)
    tenant = f"tenant-{first.task_queue}"
    await hand_shop_to(database_url, tenant)
    order_id = await _refundable_order(database_url, 15_000)
    handle = await client.start_workflow(
        AgentWorkflow.run,
        AgentRequest(
            question=f"Please refund $150.00 for order {order_id}, it arrived damaged",
            tenant=tenant,
            actor=STAFF,
        ),
        id=f"upgraded-{uuid.uuid4().hex[:12]}",
        task_queue=first.task_queue,
    )
    await awaiting_approval(handle)
    before = {versioned.owner(i) for i in await identities(handle)}
    assert before == set(versioned.workers), "release-1 served the run up to the approval"

    # The next release starts beside the old one (whose workers keep polling), and is
    # made current: the run's next workflow task (the approval) goes to it.
    following = first.model_copy(update={"worker_build_id": NEXT_BUILD_ID})
    (tmp_path / "next").mkdir()
    upgraded = WorkerFleet(following, fleet_env(following, carrier_url), tmp_path / "next")
    upgraded.start("cpu", 1)
    upgraded.start("inference", 1)
    try:
        await upgraded.wait_polling(client)
        await _make_current(client, first.worker_deployment, NEXT_BUILD_ID)
        assert all(w.process.poll() is None for w in versioned.workers), "release-1 still up"
        decision = ApprovalDecision(
            approved=True, approver="bob", reason="damage confirmed", approval_id=1
        )
        try:
            # The public path (the gateway's, the CLI's): it waits out a moment in which
            # the server refuses updates while the run moves to the new release.
            answer = await decide_approval(client, handle.id, decision)
        except RPCError:
            failed = await _failed_tasks(handle)
            raise AssertionError(f"the run's workflow tasks failed: {failed}") from None
        assert answer.approved
        result = await asyncio.wait_for(handle.result(), 120)
        [refund] = [s for s in result.steps if s.tool == "create_refund"]
        assert refund.output is not None and refund.output["created"] is True
        after = await _identities_after_approval(handle)
        owners = {upgraded.owner(i) for i in after}
        old = [(i, w.kind) for i in after if (w := versioned.owner(i))]
        assert None not in owners, f"after the approval, release-2's workers alone: {old}"
        assert set(upgraded.of_kind("cpu")) <= owners
    finally:
        upgraded.stop()
    info = (await handle.describe()).raw_description.workflow_execution_info.versioning_info
    assert info.deployment_version.build_id == NEXT_BUILD_ID
    assert info.behavior == VersioningBehavior.VERSIONING_BEHAVIOR_AUTO_UPGRADE
