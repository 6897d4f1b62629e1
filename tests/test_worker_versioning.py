"""Temporal worker versioning, opt in (`workers.versioning`): a CPU and an inference worker
process of one release poll as one worker deployment version; once the operator makes it
current, a new run is served by that version, its model activities included, and its
history says which version and behaviour it ran under.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from temporalio.api.enums.v1 import VersioningBehavior
from temporalio.api.workflowservice.v1 import SetWorkerDeploymentCurrentVersionRequest
from temporalio.client import Client

from agentkeel.schemas.actor import Actor
from agentkeel.schemas.request import AgentRequest
from agentkeel.workers.settings import Settings, SettingsError
from agentkeel.workers.stack.fleet import WorkerFleet
from agentkeel.workflows.agent import AgentWorkflow
from tests.fleet_stack import fleet_env, identities
from tests.pg import hand_shop_to

STAFF = Actor(role="staff", name="versioned")
BUILD_ID = "release-1"
CURRENT_S = 60.0
"""How long the new version may take to be known to the server once its workers poll."""


@pytest.fixture
async def versioned(
    client: Client, database_url: str, redis_url: str, carrier_url: str, tmp_path: Path
) -> AsyncIterator[WorkerFleet]:
    settings = Settings(
        database_url=database_url,
        redis_url=redis_url,
        temporal_address=client.service_client.config.target_host,
        task_queue=f"versioned-{uuid.uuid4().hex[:8]}",
        metrics_address="off",
        local_policy="off",  # the policy steps go to the inference worker: one version
        semantic_cache="off",
        warm_every_s=0,
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


async def _make_current(client: Client, deployment: str) -> None:
    """What `temporal worker deployment set-current-version` does, retried until the server
    knows the version its workers poll as."""
    deadline = time.monotonic() + CURRENT_S
    while True:
        try:
            await client.workflow_service.set_worker_deployment_current_version(
                SetWorkerDeploymentCurrentVersionRequest(
                    namespace=client.namespace, deployment_name=deployment, build_id=BUILD_ID
                )
            )
            return
        except Exception:
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.5)


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


def test_a_deployment_needs_its_build_id() -> None:
    with pytest.raises(SettingsError, match="WORKER_DEPLOYMENT and AGENTKEEL_WORKER_BUILD_ID"):
        Settings.from_env({"AGENTKEEL_WORKER_DEPLOYMENT": "agentkeel"})
    assert Settings.from_env({}).worker_deployment == ""
