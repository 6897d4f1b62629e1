"""`agentkeel demo`: bring up the stack, ask sample questions, leave the UI to inspect them."""

from __future__ import annotations

import uuid

from temporalio.client import WorkflowFailureError

from schemas.request import AgentRequest
from workers.client import run_agent
from workers.report import format_result
from workers.settings import Settings
from workers.stack import describe, start_detached
from workers.temporal_client import connect

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
    ("the same question again: served from the path cache", REPEATED.upper()),
)


async def run_demo(settings: Settings) -> int:
    print("agentkeel demo: starting the local stack (first start seeds the database) ...")
    endpoints = start_detached(settings)
    print(describe(endpoints), end="\n\n")
    client = await connect(
        Settings(
            temporal_address=endpoints.temporal_address,
            temporal_namespace=settings.temporal_namespace,
        )
    )
    tenant = f"demo-{uuid.uuid4().hex[:8]}"  # a fresh tenant: the first ask is always a miss
    failed = 0
    for what, question in DEMO_QUESTIONS:
        print(f"> {question}\n  ({what})")
        try:
            result = await run_agent(
                client,
                AgentRequest(question=question, tenant=tenant),
                task_queue=settings.task_queue,
            )
        except WorkflowFailureError as exc:
            failed += 1
            print(f"  the run failed: {exc.cause}\n")
            continue
        print(format_result(result))
        print(f"  workflow {result.workflow_id}\n")
    ui = endpoints.ui_url or "(the Temporal server was not started by agentkeel)"
    print(f"Inspect these runs in the Temporal Web UI: {ui}/namespaces/default/workflows")
    print("The stack keeps running for that; `agentkeel down` stops it.")
    return 1 if failed else 0
