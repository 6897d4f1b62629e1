"""A team's own Temporal Worker hosts agentkeel beside its own workflow: the client is made
with `agentkeel_plugins`, the worker names only the team's workflow and activity, and both
the team's workflow and an agent run (started through `agentkeel.AgentClient.connect()`,
from the environment's settings) complete on it."""

from __future__ import annotations

import uuid

import pytest
from temporalio.client import Client
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

import agentkeel
from agentkeel.schemas.request import AgentRequest
from agentkeel.settings.model import Settings
from agentkeel.workers.hosting import agentkeel_plugins
from tests.support.pg import hand_shop_to
from tests.support.team_workflow import TeamGreeting, team_greet


async def test_a_teams_worker_hosts_the_agent_beside_its_own_workflow(
    temporal_env: WorkflowEnvironment,
    database_url: str,
    redis_url: str,
    carrier_url: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    queue, tenant = f"team-{uuid.uuid4().hex[:10]}", f"team-{uuid.uuid4().hex[:6]}"
    address = temporal_env.client.service_client.config.target_host
    environment = {
        "AGENTKEEL_TEMPORAL_ADDRESS": address,
        "AGENTKEEL_TEMPORAL_NAMESPACE": temporal_env.client.namespace,
        "AGENTKEEL_DATABASE_URL": database_url,
        "AGENTKEEL_REDIS_URL": redis_url,
        "AGENTKEEL_TASK_QUEUE": queue,
        "AGENTKEEL_SEMANTIC_CACHE": "off",
    }
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    await hand_shop_to(database_url, tenant)
    settings = Settings.from_env()
    shop = {"AGENTKEEL_SHOP_CARRIER_URL": carrier_url}
    async with agentkeel_plugins(settings, domain_environ=shop) as plugins:
        client = await Client.connect(address, namespace=settings.temporal_namespace,
                                      plugins=plugins)  # fmt: skip
        worker = Worker(client, task_queue=queue, workflows=[TeamGreeting], activities=[team_greet])
        async with worker:
            greeting = await client.execute_workflow(
                TeamGreeting.run, "ops", id=f"greet-{queue}", task_queue=queue
            )
            assert greeting == "hello ops"
            agent = await agentkeel.AgentClient.connect()  # the settings of the environment
            try:
                result = await agent.ask(
                    AgentRequest(question="Where is order 1001?", tenant=tenant),
                    workflow_id=f"agent-{queue}",
                )
            finally:
                await agent.close()
    assert isinstance(agent, agentkeel.AgentClient)
    assert [s.tool for s in result.steps][:1] == ["get_order"], result.steps
    assert "1001" in result.answer
