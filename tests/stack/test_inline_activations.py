"""Where the CPU worker runs workflow activations (`AGENTKEEL_WORKFLOW_ACTIVATIONS`): on its
event loop by default, on the SDK's threads when told so or when the sandbox is on."""

from __future__ import annotations

import threading
import uuid

from temporalio import workflow
from temporalio.client import Client

from agentkeel.settings.model import Settings
from agentkeel.workers.worker import cpu_worker


@workflow.defn(name="TestActivationThread", sandboxed=False)
class ActivationThread:
    """Test-only and not replay-safe: it reports the thread its activation ran on."""

    @workflow.run
    async def run(self) -> str:
        return threading.current_thread().name


async def _activation_thread(client: Client, *, inline: bool, sandboxed: bool = False) -> str:
    queue = f"activations-{uuid.uuid4().hex[:8]}"
    worker = cpu_worker(
        client,
        queue,
        [],
        extra_workflows=[ActivationThread],
        sandboxed=sandboxed,
        inline_activations=inline,
    )
    async with worker:
        name: str = await client.execute_workflow(
            ActivationThread.run, id=f"activations-{uuid.uuid4().hex}", task_queue=queue
        )
    return name


async def test_activations_run_on_the_workers_loop_by_default(client: Client) -> None:
    assert Settings().inline_activations()
    assert await _activation_thread(client, inline=True) == threading.current_thread().name


async def test_thread_mode_and_the_sandbox_hand_activations_to_the_sdks_threads(
    client: Client,
) -> None:
    assert (await _activation_thread(client, inline=False)).startswith("temporal_workflow_")
    # The sandbox never runs inline: the SDK's inline path would relax it for a debugger.
    sandboxed = await _activation_thread(client, inline=True, sandboxed=True)
    assert sandboxed.startswith("temporal_workflow_")
    assert not Settings(workflow_sandbox="on").inline_activations()
    assert not Settings(workflow_activations="thread").inline_activations()
