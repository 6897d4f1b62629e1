"""`AgentWorkflow` and the served domain's tools on a team's own Temporal Worker, beside its
own workflows and activities: Temporal worker plugins, as Temporal's OpenAI Agents and
Pydantic AI integrations host their agents.

    async with agentkeel_plugins(settings) as plugins:
        client = await Client.connect(address, namespace=namespace, plugins=plugins)
        worker = Worker(client, task_queue=settings.task_queue,
                        workflows=[TeamWorkflow], activities=[team_activity])
        await worker.run()

The plugins are agentkeel's data converter and sandbox pass-throughs, Temporal's LangGraph
plugin carrying the agent's graph, and one that adds agentkeel's workflows and the CPU
worker's activities (the tools, the cache, persistence; bound to the pools this context
opens) to every worker built from the client. Given to `Client.connect`, the worker
inherits them. The worker's task queue is `settings.task_queue`: runs are started there and
their tool steps run there; model steps go to `<task queue>-inference` (an agentkeel
inference worker) unless no model is configured and the rules serve them here.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from typing import Any

from temporalio.plugin import SimplePlugin
from temporalio.worker import Worker, WorkerConfig

from agentkeel.settings.model import Settings
from agentkeel.settings.namespace_setup import ensure_search_attributes
from agentkeel.workers.resources import cpu_activities
from agentkeel.workers.temporal_client import agentkeel_plugins as client_plugins
from agentkeel.workers.worker import holding
from agentkeel.workflows.agent import AgentWorkflow
from agentkeel.workflows.fan_out_part import FanOutWorkflow
from agentkeel.workflows.warmer import CacheWarmerWorkflow

__all__ = ["AGENT_WORKFLOWS", "agentkeel_plugins", "hosting_plugin"]

AGENT_WORKFLOWS: tuple[type, ...] = (AgentWorkflow, FanOutWorkflow, CacheWarmerWorkflow)
"""The workflows a worker hosting agentkeel runs (the agent, its fan-out children, the
cache warmer its schedule starts)."""


class _Hosting(SimplePlugin):
    def __init__(self, *args: Any, held_patches: frozenset[str] = frozenset(), **kw: Any) -> None:
        super().__init__(*args, **kw)
        self._held = held_patches

    def configure_worker(self, config: WorkerConfig) -> WorkerConfig:
        config = super().configure_worker(config)
        if self._held:  # a rollout holds these changes back (AGENTKEEL_HELD_PATCHES)
            config["patch_activation_callback"] = holding(self._held)
        return config

    async def run_worker(self, worker: Worker, next: Callable[[Worker], Awaitable[None]]) -> None:
        # AgentWorkflow upserts these search attributes: registered before any task runs.
        client = worker.client
        await ensure_search_attributes(client, client.namespace)
        await super().run_worker(worker, next)


def hosting_plugin(
    activities: Sequence[Callable[..., Any]], held_patches: frozenset[str] = frozenset()
) -> SimplePlugin:
    """A worker plugin adding agentkeel's workflows and `activities` to the worker's own,
    registering the search attributes the agent sets before the worker runs, and holding
    back the changes a rollout holds (`held_patches`, `AGENTKEEL_HELD_PATCHES`)."""
    return _Hosting(
        "agentkeel.AgentWorker",
        workflows=list(AGENT_WORKFLOWS),
        activities=list(activities),
        held_patches=held_patches,
    )


@asynccontextmanager
async def agentkeel_plugins(
    settings: Settings | None = None, **options: Any
) -> AsyncIterator[list[SimplePlugin]]:
    """The plugins that host agentkeel on a worker, while the pools its tools use are open.

    `settings`: agentkeel's (default: `Settings.from_env()`): its database, Redis, task
    queue and models. `options` go to `workers.resources.cpu_activities` (`local`,
    `domain_environ`). The served domain is the one `AGENTKEEL_DOMAIN` names."""
    settings = settings or Settings.from_env()
    async with cpu_activities(settings, **options) as activities:
        yield [*client_plugins(), hosting_plugin(activities, settings.held_patch_ids())]
