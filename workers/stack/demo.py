"""`agentkeel demo`: bring up the stack, ask sample questions, leave the UI to inspect them."""

from __future__ import annotations

import dataclasses
import uuid

from temporalio.client import WorkflowFailureError

from agentkeel.schemas.request import AgentRequest
from agentkeel.workers.client.agent_client import AgentClient
from agentkeel.workers.client.report import format_result
from agentkeel.workers.client.status_line import StatusLine, stack_starting
from agentkeel.workers.settings import Settings
from agentkeel.workers.stack.demo_watch import demo_watch
from agentkeel.workers.stack.supervisor import describe, start_detached

REPEATED = "What is your return policy for damaged items?"
DEMO_QUESTIONS: tuple[tuple[str, str], ...] = (
    ("dependent steps: the tracking number comes from the order", "Where is order 1001?"),
    (
        "parallel steps: three independent stock checks",
        "Is SKU-00001 in stock, and SKU-00002, and SKU-00003?",
    ),
    (
        "runtime expansion: one stock check per item of the order",
        "Can order 1002 be fulfilled from stock?",
    ),
    (
        "parallel branches, one of them dependent",
        "Where is order 1003, and what is your return policy?",
    ),
    ("dependent steps: customer, then their orders", "Show the orders of alice@example.com"),
    ("an unsure route: the planner writes the plan", "I have a problem with something I got"),
    ("a knowledge-base question (stored in the path cache)", REPEATED),
    ("the same question again: the client answers from the exact tier", REPEATED.upper()),
    (
        "a paraphrase: a guarded semantic hit (when the semantic extra is installed)",
        "Whats your policy on returning damaged items?",
    ),
    (
        "the first question again: live tracking has no TTL, so the cached plan is reused",
        "Where is order 1001?",
    ),
)


async def run_demo(settings: Settings) -> int:
    print("agentkeel demo: starting the local stack (first start seeds the database) ...")
    with StatusLine("starting the local stack") as line:
        endpoints = start_detached(settings, on_wait=stack_starting(line))
    print(describe(endpoints), end="\n\n")
    client = await AgentClient.connect(
        dataclasses.replace(settings, temporal_address=endpoints.temporal_address),
        redis_url=endpoints.redis_url,
    )
    tenant = f"demo-{uuid.uuid4().hex[:8]}"  # a fresh tenant: the first ask is always a miss
    failed = 0
    for what, question in DEMO_QUESTIONS:
        print(f"> {question}\n  ({what})")
        try:
            result = await client.ask(AgentRequest(question=question, tenant=tenant))
        except WorkflowFailureError as exc:
            failed += 1
            print(f"  the run failed: {exc.cause}\n")
            continue
        print(format_result(result))
        where = result.workflow_id or "none: answered by the client from the exact tier"
        print(f"  workflow {where}\n")
    failed += await demo_watch(client, endpoints.database_url, tenant)
    ui = endpoints.ui_url or "(the Temporal server was not started by agentkeel)"
    print(f"Inspect these runs in the Temporal Web UI: {ui}/namespaces/default/workflows")
    print("The stack keeps running for that; `agentkeel down` stops it.")
    await client.close()
    return 1 if failed else 0
