"""Every system of `bench.peers` on one dev server (the bench stack's), each with its workers."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from datetime import timedelta
from types import ModuleType
from typing import Any

from temporalio.client import Client

from bench import peer_bare, peer_openai_agents, peer_pydantic_ai
from bench.peer_agentkeel import AgentkeelPeer, agentkeel_peer
from bench.peer_cases import Case
from bench.stack import StackConfig

RUN_TIMEOUT = timedelta(seconds=120)
"""Execution timeout of every peer run: a broken system fails the benchmark, not hangs it."""
Run = Callable[[Case, str], Awaitable[Any]]
"""(case, workflow id) -> the finished run's result (after its calls were made)."""


@dataclass(frozen=True)
class Variant:
    """One system in one configuration."""

    label: str
    run: Run
    settle: Callable[[str], Awaitable[Any]] | None = None
    """Waits, untimed, until the run whose answer `run` returned has closed (agentkeel's
    client returns once the answer is announced, before the run record is written): the
    next run, of any system, never shares the machine with its bookkeeping."""


PEERS: dict[str, ModuleType] = {
    "openai-agents": peer_openai_agents,
    "pydantic-ai": peer_pydantic_ai,
    "bare": peer_bare,
}


def _agentkeel_variant(peer: AgentkeelPeer, local_tools: bool, models_here: bool) -> Variant:
    async def run(case: Case, workflow_id: str) -> Any:
        return await peer.ask(case, workflow_id, local_tools=local_tools, models_here=models_here)

    async def settle(workflow_id: str) -> Any:
        return await peer.stack.client.get_workflow_handle(workflow_id).result()

    tools = "local" if local_tools else "queue"
    return Variant(f"agentkeel ({tools} tools, models {MODEL_FORMS[models_here]})", run, settle)


MODEL_FORMS = {False: "pool", True: "here"}
"""Where agentkeel's model steps run: the inference pool, or the CPU worker itself."""


def _peer_variant(
    system: str, module: ModuleType, client: Client, queue: str, local: bool
) -> Variant:
    async def run(case: Case, workflow_id: str) -> Any:
        return await client.execute_workflow(
            module.RUN,
            case.question,
            id=workflow_id,
            task_queue=queue,
            execution_timeout=RUN_TIMEOUT,
        )

    return Variant(f"{system} ({'local' if local else 'queue'} tools)", run)


@asynccontextmanager
async def peer_stack(
    config: StackConfig,
    model_url: str,
    *,
    tool_forms: tuple[str, ...] = ("local", "queue"),
    model_forms: tuple[str, ...] = ("pool", "here"),
) -> AsyncIterator[tuple[list[Variant], AgentkeelPeer]]:
    """agentkeel's bench stack and every peer's workers, all on the model at `model_url`;
    each system's tools as local activities, through the task queue, or both
    (`tool_forms`); agentkeel's model steps on its inference pool, on its CPU worker, or
    both (`model_forms`)."""
    async with agentkeel_peer(config, model_url) as agentkeel, AsyncExitStack() as workers:
        wanted = [form == "local" for form in tool_forms]
        variants = [
            _agentkeel_variant(agentkeel, local, here)
            for local in wanted
            for here in (True, False)
            if MODEL_FORMS[here] in model_forms
        ]
        server = agentkeel.stack.client.service_client.config.target_host
        namespace = agentkeel.stack.client.namespace
        for system, module in PEERS.items():
            # Each system's own client: its plugin sets its data converter (and, for the
            # OpenAI Agents integration, the model activity) there.
            client = await module.client_for(server, namespace, model_url)
            modes = [local for local in wanted if module.LOCAL_TOOLS_SUPPORTED or not local]
            for local in modes:
                queue = f"peers-{system}-{'local' if local else 'queue'}-{uuid.uuid4().hex[:6]}"
                for worker in module.workers(client, queue, local_tools=local):
                    await workers.enter_async_context(worker)
                variants.append(_peer_variant(system, module, client, queue, local))
        yield variants, agentkeel
