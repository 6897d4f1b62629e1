"""The public contract: other services start runs with plain JSON, e.g. the `temporal` CLI."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import uuid
from collections.abc import Mapping
from pathlib import Path

import pytest
from temporalio.client import Client, WorkflowFailureError
from temporalio.exceptions import ApplicationError

from agentkeel.schemas.result import AgentResult, CacheStatus, StepStatus
from tests.support.agent_stack import AgentStack
from tests.support.services import temporal_binary


async def temporal_cli(client: Client, *args: str) -> str:
    proc = await asyncio.create_subprocess_exec(
        temporal_binary(),
        *args,
        "--address",
        client.service_client.config.target_host,
        "--namespace",
        client.namespace,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await proc.communicate()
    assert proc.returncode == 0, err.decode()
    return out.decode()


async def start_with_cli(stack: AgentStack, payload: Mapping[str, object]) -> str:
    """`temporal workflow start` with a JSON input, as a service in any language would."""
    workflow_id = f"cli-{uuid.uuid4().hex[:10]}"
    await temporal_cli(
        stack.client,
        *("workflow", "start", "--type", "AgentWorkflow", "--task-queue", stack.task_queue),
        *("--workflow-id", workflow_id, "--input", json.dumps(payload)),
    )
    return workflow_id


async def test_started_from_the_temporal_cli_with_json(stack: AgentStack) -> None:
    payload = {"question": "Where is order 1001?", "tenant": stack.tenant}
    workflow_id = await start_with_cli(stack, payload)
    handle = stack.client.get_workflow_handle(workflow_id, result_type=AgentResult)
    result = await handle.result()
    assert result.cache == CacheStatus.MISS
    assert [s.tool for s in result.steps] == ["get_order", "track_shipment"]
    assert all(s.status == StepStatus.SUCCEEDED for s in result.steps)

    # What a client in another language reads back: plain JSON with the documented fields.
    shown = json.loads(
        await temporal_cli(
            stack.client, "workflow", "result", "--workflow-id", workflow_id, "--output", "json"
        )
    )
    body = shown["result"] if "result" in shown else shown
    assert {"answer", "route", "cache", "plan", "steps", "timings_ms"} <= set(body)
    assert {"intent", "tier", "confidence"} <= set(body["route"])
    assert set(body["timings_ms"]) >= {"cache", "route", "plan", "tools", "respond", "total"}
    step = body["steps"][1]
    assert {"id", "tool", "args", "status", "started_at", "finished_at", "output"} <= set(step)


@pytest.mark.parametrize(
    ("payload", "named"),
    [
        ({"question": "hi", "colour": "blue"}, "colour"),
        ({"tenant": "x"}, "question"),
        ({"question": "   "}, "question"),
    ],
)
async def test_invalid_input_fails_at_once_naming_the_field(
    stack: AgentStack, payload: dict[str, object], named: str
) -> None:
    workflow_id = await start_with_cli(stack, payload)
    handle = stack.client.get_workflow_handle(workflow_id)
    with pytest.raises(WorkflowFailureError) as failure:
        await asyncio.wait_for(handle.result(), timeout=20)
    cause = failure.value.cause
    assert isinstance(cause, ApplicationError)
    assert cause.type == "InvalidRequest" and cause.non_retryable
    assert named in cause.message
    history = await handle.fetch_history()
    scheduled = [
        e for e in history.events if e.HasField("activity_task_scheduled_event_attributes")
    ]
    assert scheduled == [], "nothing runs for an invalid request"


async def test_cli_ask_prints_the_result_json(stack: AgentStack, tmp_path: Path) -> None:
    env = {
        **os.environ,
        "AGENTKEEL_TEMPORAL_ADDRESS": stack.client.service_client.config.target_host,
        "AGENTKEEL_TASK_QUEUE": stack.task_queue,
        "AGENTKEEL_STATE_DIR": str(tmp_path),  # no running stack there: settings decide
        "AGENTKEEL_LOG_FORMAT": "json",
    }
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "agentkeel.cli.main",
        "ask",
        "Show the orders of alice@example.com",
        "--json",
        "--tenant",
        stack.tenant,
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await proc.communicate()
    assert proc.returncode == 0, err.decode()
    result = AgentResult.model_validate_json(out)
    assert [s.tool for s in result.steps] == ["find_customer", "list_orders"]
    assert result.steps[1].args == {"customer_id": 1}
    assert "#1001" in result.answer
