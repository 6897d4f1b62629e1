"""agentkeel in `bench.peers`, as a business runs it: its real LLM policy on the model server.

- **Models**: the light and the heavy tier are the token-timed server (`bench.token_server`)
  through agentkeel's OpenAI-compatible engine, so every prompt, schema, parse and
  cascade decision is the shipped one. The model activities run on `agentkeel worker
  inference`, a process of its own beside the CPU worker, as agentkeel is deployed (a
  dedicated inference pool): a plan written while tools run shares the machine's cores
  with them, not the CPU worker's event loop. The ideal model routes unsure (below the 0.7
  threshold), so the heavy tier plans: the cascade's own path.
- **Model steps**: on the inference pool, or as local activities of the CPU worker
  (`AGENTKEEL_LOCAL_POLICY=on`, calling the same server from there: no task-queue round
  trip, no early reads from the plan's stream), one row each.
- **Tools**: the four `agentkeel.tool` functions of `bench.peer_domain` (its whole tool
  layer), as local activities or through the task queue (`AGENTKEEL_LOCAL_TOOLS`, one row
  each).
- **Runs**: started with `AgentClient.ask` (its fast-path lookup included), each question
  its own (`bench.peer_cases`). Warm: the tenant's recent routes were unsure, so the
  planner starts beside the router (`AGENTKEEL_PLAN_AHEAD=auto`, the default; the
  forecast is in Redis), and the question names the orders its first reads need, which
  start at the run's first moment (speculation, up to 8 reads). Cold: a tenant nobody has
  seen (no history of its own: the forecast goes by its deployment's routes, every
  tenant's, and where those are too few by `AGENTKEEL_PLAN_AHEAD_UNSEEN`) and a question
  that names nothing, so no read starts before the planner writes it.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from datetime import UTC
from typing import Any

from temporalio.api.enums.v1 import EventType

from agentkeel import AgentClient, AgentRequest, AgentResult, RunOptions
from agentkeel.sdk.loading import load_domain
from agentkeel.sdk.serving import install_domain
from agentkeel.settings.model import Settings
from agentkeel.workers.policy_assembly import build_policy
from bench.peer_cases import TOOL_ARGS, Case
from bench.stack import BenchStack, StackConfig, bench_stack

DOMAIN = "bench.peer_domain:domain"
WARM_TENANT = "bench-warm"
WIDEST = 8
"""The run cap and the speculation cap: as wide as the widest shape (the peers have none)."""


def tier(url: str) -> dict[str, str]:
    """One model tier on the token server."""
    return {"url": url, "model": "ideal", "api": "chat"}


@dataclass
class AgentkeelPeer:
    stack: BenchStack
    client: AgentClient
    cold_runs: int = 0

    def tenant(self, case: Case) -> str:
        """Warm runs share a tenant whose routes the forecast has seen; each cold run
        comes from a tenant of its own."""
        if case.named:
            return WARM_TENANT
        self.cold_runs += 1
        return f"bench-cold-{uuid.uuid4().hex[:8]}"

    async def ask(
        self, case: Case, workflow_id: str, *, local_tools: bool, models_here: bool = False
    ) -> AgentResult:
        self.stack.local_offers.tools_here = local_tools
        self.stack.local_offers.steps_here = models_here
        request = AgentRequest(
            question=case.question,
            tenant=self.tenant(case),
            # A replan writes what changes (`replan_patch`, agentkeel's own lever).
            options=RunOptions(max_concurrency=WIDEST, replan_patch=True),
        )
        result = await self.client.ask(request, workflow_id=workflow_id)
        if result.plan_error is not None:
            error = result.plan_error
            raise RuntimeError(f"{workflow_id}: {error.type}: {error.message}")
        return result

    async def first_tool_ms(self, workflow_id: str, result: Any) -> float | None:
        """When the run's first tool started, in ms after the run did: its first tool
        activity scheduled (an early read, on the task queue), else its first step's start
        (reads as local activities leave only a marker when done). None: no agentkeel run,
        or no tool ran."""
        if not isinstance(result, AgentResult):
            return None
        history = await self.stack.client.get_workflow_handle(workflow_id).fetch_history()
        started = history.events[0].event_time.ToDatetime(tzinfo=UTC)
        scheduled = [
            e.event_time.ToDatetime(tzinfo=UTC)
            for e in history.events
            if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
            and e.activity_task_scheduled_event_attributes.activity_type.name in TOOL_ARGS
        ]
        steps = [s.started_at for s in result.steps if s.started_at is not None]
        first = min(scheduled or steps, default=None)
        return None if first is None else (first - started).total_seconds() * 1000


@asynccontextmanager
async def agentkeel_peer(config: StackConfig, model_url: str) -> AsyncIterator[AgentkeelPeer]:
    """The bench stack serving `bench.peer_domain` with the LLM policy on `model_url`."""
    tiers: dict[str, Any] = {"light": tier(model_url), "heavy": tier(model_url)}
    install_domain(load_domain(DOMAIN))  # the policy reads the served domain's catalog
    assembly = build_policy(Settings(domain=DOMAIN, **tiers))
    await assembly.start()
    async with AsyncExitStack() as exits:
        exits.push_async_callback(assembly.close)
        stack = await exits.enter_async_context(
            bench_stack(
                config,
                policy=assembly.policy,
                stand_ins=[],
                domain=DOMAIN,
                speculation_max_calls=WIDEST,
                inference_process=True,  # its own process, as deployed (a dedicated pool)
                # The CPU worker may make the model calls itself too (a run at a time picks:
                # `AgentkeelPeer.ask`'s `models_here`), its engines built from the settings.
                local_policy="on",
                **tiers,
            )
        )
        client = AgentClient.from_settings(stack.client, stack.settings)
        exits.push_async_callback(client.close)
        yield AgentkeelPeer(stack, client)
