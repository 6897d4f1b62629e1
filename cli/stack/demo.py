"""`agentkeel demo`: bring up the stack, ask sample questions, leave the UI to inspect them."""

from __future__ import annotations

from temporalio.client import WorkflowFailureError

from agentkeel.cli.stack.supervisor import describe, start_detached
from agentkeel.client.agent_client import AgentClient
from agentkeel.client.report import format_result, went_wrong
from agentkeel.client.status_line import StatusLine, stack_starting
from agentkeel.schemas.actor import SYSTEM_ACTOR, Actor
from agentkeel.schemas.request import AgentRequest, RunOptions
from agentkeel.settings.domain_assembly import serve_domain
from agentkeel.settings.model import Settings

DEMO_TENANT = AgentRequest.model_fields["tenant"].default
"""A request's default tenant, which a domain's seed (`Domain.seed`) writes its rows to."""


async def run_demo(settings: Settings) -> int:
    domain = serve_domain(settings)
    if not domain.demo_questions:
        print(f"domain {domain.name} has no demo questions (Domain.demo_questions)")
        return 1
    print("agentkeel demo: starting the local stack (first start seeds the database) ...")
    with StatusLine("starting the local stack") as line:
        endpoints = start_detached(settings, on_wait=stack_starting(line))
    print(describe(endpoints), end="\n\n")
    client = await AgentClient.connect(
        settings.model_copy(update={"temporal_address": endpoints.temporal_address}),
        redis_url=endpoints.redis_url,
    )
    # The seed's tenant: a fresh one would own no rows, and every lookup would fail.
    tenant = DEMO_TENANT
    failed = 0
    for asked in domain.demo_questions:
        question = asked.question
        print(f"> {question}" + (f"\n  ({asked.title})" if asked.title else ""))
        actor = Actor(role=asked.role, subject=asked.subject) if asked.role else SYSTEM_ACTOR
        try:
            # An earlier demo stored these answers: every question but those meant to show a
            # hit skips the lookup (and stores afresh), so each demo runs the steps it shows.
            options = RunOptions(refresh_cache=not asked.shows_cache)
            request = AgentRequest(question=question, tenant=tenant, actor=actor, options=options)
            result = await client.ask(request)
        except WorkflowFailureError as exc:
            failed += 1
            print(f"  the run failed: {exc.cause}\n")
            continue
        print(format_result(result))
        if went_wrong(result):
            failed += 1
        where = result.workflow_id or "none: answered by the client from the exact tier"
        print(f"  workflow {where}\n")
    if domain.demo_script is not None:
        failed += await domain.demo_script(client, endpoints.database_url, tenant)
    ui = endpoints.ui_url or "(the Temporal server was not started by agentkeel)"
    print(f"Inspect these runs in the Temporal Web UI: {ui}/namespaces/default/workflows")
    print("The stack keeps running for that; `agentkeel down` stops it.")
    await client.close()
    return 1 if failed else 0
