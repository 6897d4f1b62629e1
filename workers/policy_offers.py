"""What the CPU worker serves of the policy steps itself, and how model activities are set.

Where the worker answers route, plan, join and respond as local activities
(`activities.local_policy`): the rules where no model is configured, every tier with
`AGENTKEEL_LOCAL_POLICY=on`. The inference pool's model activities take their forecast and
metering from the same settings (`unsure_forecast`, `usage_metering`).
"""

from __future__ import annotations

from contextlib import AsyncExitStack

import asyncpg
import redis.asyncio as aioredis
import structlog

from agentkeel.activities.conversations import ConversationStore
from agentkeel.activities.local_policy import LocalPolicyActivities
from agentkeel.activities.model_calls import InferenceActivities
from agentkeel.activities.model_slots import ModelSlots
from agentkeel.activities.outputs import OutputStore
from agentkeel.activities.plan_ahead import UnsureForecast
from agentkeel.activities.usage_ledger import UsageLedger, UsageMetering
from agentkeel.inference.policy import Policy
from agentkeel.settings.head_start import speculative_calls
from agentkeel.settings.model import Settings
from agentkeel.workers.policy_assembly import PolicyAssembly, local_policy
from agentkeel.workflows.timeouts import RESPOND_TIMEOUT

log = structlog.get_logger(__name__)


def served_here(local: Policy | None, settings: Settings) -> PolicyAssembly | None:
    """The policy this worker serves itself, not started: `local` where given, else the
    settings' (`local_policy`: checked before the worker opens anything)."""
    return PolicyAssembly(local, [], concurrency=1) if local is not None else local_policy(settings)


async def local_policy_offers(
    assembly: PolicyAssembly | None,
    pool: asyncpg.Pool,
    redis: aioredis.Redis,
    settings: Settings,
    stack: AsyncExitStack,
) -> LocalPolicyActivities:
    """The policy steps this worker serves itself (`served_here`), its engines started here
    and closed with `stack`."""
    if assembly is not None:
        await assembly.start()
        stack.push_async_callback(assembly.close)
    # Said once at start: which pool answers route, plan, join and respond.
    log.info("policy_steps", served_by="this worker" if assembly else "the inference pool")
    served = None
    if assembly is not None:
        served = InferenceActivities(
            assembly.policy,
            redis=redis,
            conversations=ConversationStore(pool),
            outputs=OutputStore(pool),
            speculate_calls=speculative_calls(settings),
            forecast=unsure_forecast(settings),
            # A local activity's signals reach its run only after it: no early reads.
            stream_plans=False,
            usage=usage_metering(settings, redis),
            # Models called from CPU workers count against the deployment's cap on each
            # model server as the inference pool's calls do (`AGENTKEEL_MODEL_CONCURRENCY`).
            model_slots=ModelSlots(
                redis,
                settings.model_concurrency,
                namespace=settings.task_queue,
                lease_s=RESPOND_TIMEOUT.total_seconds(),
            )
            if assembly.engines
            else None,
        )
    return LocalPolicyActivities(served, tools_here=settings.local_tools == "on")


def unsure_forecast(settings: Settings) -> UnsureForecast:
    """When the inference worker plans beside the router (`AGENTKEEL_PLAN_AHEAD*`); the
    forecast is shared through Redis once the worker has a Redis client."""
    return UnsureForecast(
        settings.plan_ahead, above=settings.plan_ahead_above, unseen=settings.plan_ahead_unseen
    )


def usage_metering(settings: Settings, redis: aioredis.Redis | None) -> UsageMetering:
    """How a model activity prices and counts its calls (`AGENTKEEL_MODEL_PRICES`,
    `AGENTKEEL_BUDGET_WINDOW`): windows in `redis`, shared by the deployment's workers."""
    ledger = UsageLedger(
        redis,
        settings.task_queue,
        window_s=settings.budget_window_s,
        max_labels=settings.usage_metric_labels,
    )
    return UsageMetering(settings.price_table(), ledger)
