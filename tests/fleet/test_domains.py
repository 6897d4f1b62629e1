"""A second domain, unlike the shop, served by the unchanged worker binary end to end.

`tests/domains/helpdesk_domain` is a package outside the source folders, written against
`agentkeel`'s public API alone. Its workers are `agentkeel worker cpu` and `agentkeel
worker inference` processes started with `AGENTKEEL_DOMAIN=helpdesk_domain:domain`, on the
session's dev server, a database of its own and Redis; this process is only a Temporal
client (it serves the shop, the default, itself).
"""

from __future__ import annotations

import asyncio
import os
import sys
import uuid
from collections.abc import AsyncIterator
from typing import Any

import asyncpg
import pytest
from temporalio.client import Client, WorkflowFailureError, WorkflowHandle

from agentkeel.cli.stack.databases import throwaway_database
from agentkeel.schemas.names import AGENT_WORKFLOW, APPROVE_UPDATE
from tests.support.history import awaiting_approval
from tests.support.paths import DOMAINS, ROOT

sys.path.insert(0, str(DOMAINS))

import helpdesk_domain


class Helpdesk:
    def __init__(self, client: Client, queue: str, database_url: str) -> None:
        self.client, self.queue, self.database_url = client, queue, database_url
        self.tenant = f"hd-{uuid.uuid4().hex[:8]}"

    async def start(
        self, question: str, actor: dict[str, Any] | None = None, **fields: Any
    ) -> WorkflowHandle[Any, Any]:
        request: dict[str, Any] = {"question": question, "tenant": self.tenant, **fields}
        if actor is not None:
            request["actor"] = actor
        return await self.client.start_workflow(
            AGENT_WORKFLOW,
            request,
            id=f"hd-{uuid.uuid4().hex[:12]}",
            task_queue=self.queue,
            result_type=dict,
        )

    async def ask(self, question: str, actor: dict[str, Any] | None = None, **fields: Any) -> Any:
        handle = await self.start(question, actor, **fields)
        return await asyncio.wait_for(handle.result(), timeout=60)


AGENT = {"role": "agent", "name": "carol"}


@pytest.fixture
async def helpdesk(client: Client, admin_dsn: str, redis_url: str) -> AsyncIterator[Helpdesk]:
    queue = f"hd-{uuid.uuid4().hex[:12]}"
    async with throwaway_database(
        admin_dsn,
        prefix="agentkeel_hd",
        domain=helpdesk_domain.domain,
        seed=helpdesk_domain.seed,
    ) as database_url:
        env = {
            **{k: v for k, v in os.environ.items() if not k.startswith("AGENTKEEL_")},
            "PYTHONPATH": os.pathsep.join([str(DOMAINS), str(ROOT)]),
            "AGENTKEEL_DOMAIN": "helpdesk_domain:domain",
            "AGENTKEEL_DATABASE_URL": database_url,
            "AGENTKEEL_REDIS_URL": redis_url,
            "AGENTKEEL_TEMPORAL_ADDRESS": client.service_client.config.target_host,
            "AGENTKEEL_TASK_QUEUE": queue,
            "AGENTKEEL_METRICS_ADDRESS": "off",
            "AGENTKEEL_WARM_EVERY_S": "0",
            "AGENTKEEL_SEMANTIC_CACHE": "off",
            "AGENTKEEL_LOG_FORMAT": "json",
        }
        workers = [
            await asyncio.create_subprocess_exec(
                sys.executable, "-m", "agentkeel.workers", kind, env=env
            )
            for kind in ("cpu", "inference")
        ]
        try:
            yield Helpdesk(client, queue, database_url)
        finally:
            for worker in workers:
                if worker.returncode is None:
                    worker.terminate()
            for worker in workers:
                await asyncio.wait_for(worker.wait(), timeout=30)


def _steps(result: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {s["tool"]: s for s in result["steps"]}


async def test_a_domain_of_its_own_runs_end_to_end(helpdesk: Helpdesk) -> None:
    # Parallel steps: two independent reads of the helpdesk's own tools, by its patterns.
    status = await helpdesk.ask("What is the status of web and ticket 1?", AGENT)
    assert status["route"]["intent"] == "status"
    assert {s["tool"]: s["status"] for s in status["steps"]} == {
        "get_service": "succeeded",
        "get_ticket": "succeeded",
    }
    assert all(not step["after"] for step in status["plan"]["steps"])
    assert "web" in status["answer"] or "degraded" in status["answer"]

    # The same question again: the exact tier of the path cache answers.
    again = await helpdesk.ask("What is the status of web and ticket 1?", AGENT)
    assert again["cache"] == "exact"

    # A plan a pattern made that the catalog refuses at run time (the pattern takes a
    # service name of any length, the tool at most 40 characters): answered as refused,
    # naming why, at once, never as "no pattern matches".
    long_name = "w" * 45
    refused_plan = await helpdesk.ask(f"What is the status of {long_name} and ticket 1?", AGENT)
    assert refused_plan["route"]["intent"] == "status"
    assert refused_plan["plan_error"] is not None, refused_plan
    assert refused_plan["plan_error"]["type"] == "InvalidArguments"
    assert refused_plan["replans"] == 0 and refused_plan["steps"] == []
    assert f"InvalidArguments: step s1: argument name='{long_name}'" in refused_plan["answer"]
    assert "no pattern" not in refused_plan["answer"]

    # Its own authority rule: an employee reaches its own tickets only.
    own = await helpdesk.ask("Show ticket 3", {"role": "employee", "subject": "bob"})
    assert _steps(own)["get_ticket"]["status"] == "succeeded"
    foreign = await helpdesk.ask("Show ticket 1", {"role": "employee", "subject": "bob"})
    refused = _steps(foreign)["get_ticket"]
    assert refused["status"] == "failed" and refused["error"]["type"] == "NotAuthorized"
    assert "ticket 1" in refused["error"]["message"]

    # A side effect that needs approval, after a step it depends on; made exactly once.
    handle = await helpdesk.start("Please restart web for ticket 1", AGENT)
    awaiting = await awaiting_approval(handle)
    assert awaiting["tool"] == "restart_service" and awaiting["approver_role"] == "agent"
    decision = {"approved": True, "approver": "dave", "approval_id": awaiting["approval_id"]}
    await handle.execute_update(APPROVE_UPDATE, decision)
    restarted = await asyncio.wait_for(handle.result(), timeout=60)
    restart = _steps(restarted)["restart_service"]
    assert restart["status"] == "succeeded" and restart["output"]["restarts"] == 1
    assert restarted["plan"]["steps"][1]["args"] == {"service": "web", "ticket_id": "$s1.ticket_id"}
    conn = await asyncpg.connect(helpdesk.database_url)
    try:
        assert await conn.fetchval("SELECT count(*) FROM helpdesk_restarts") == 1

        # A watch: the run looks again every second until the ticket is resolved.
        watch = await helpdesk.start("Tell me when ticket 2 is resolved", AGENT)
        await asyncio.sleep(2.5)
        await conn.execute("UPDATE helpdesk_tickets SET status = 'resolved' WHERE ticket_id = 2")
        watched = await asyncio.wait_for(watch.result(), timeout=60)
    finally:
        await conn.close()
    seen = _steps(watched)["get_ticket"]
    assert seen["status"] == "succeeded" and seen["output"]["status"] == "resolved"
    assert seen["runs"] >= 2

    # A plan the caller brings: no planner, the same validation and the same rules.
    plan = {"steps": [{"id": "s1", "tool": "get_service", "args": {"name": "mail"}}]}
    given = await helpdesk.ask("mail health", AGENT, plan=plan)
    assert given["route"]["tier"] == "caller"
    assert _steps(given)["get_service"]["output"]["status"] == "healthy"
    effect = {
        "steps": [
            {"id": "s1", "tool": "restart_service", "args": {"service": "web", "ticket_id": 3}}
        ]
    }
    with pytest.raises(WorkflowFailureError) as caught:
        await helpdesk.ask("restart", {"role": "employee", "subject": "bob"}, plan=effect)
    assert "may not send a plan with side effects" in str(caught.value.cause)
    with pytest.raises(WorkflowFailureError) as unknown:
        await helpdesk.ask("x", AGENT, plan={"steps": [{"id": "s1", "tool": "get_order"}]})
    assert "UnknownTool" in str(unknown.value.cause)
    with pytest.raises(WorkflowFailureError) as stranger:
        await helpdesk.ask("Show ticket 1", {"role": "customer", "subject": "7"})
    assert "not a role of domain helpdesk" in str(stranger.value.cause)
