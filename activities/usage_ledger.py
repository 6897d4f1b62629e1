"""What a model activity's calls used, counted where the fleet sees it: windows in Redis and
Prometheus counters per tenant and key.

Each model activity adds its usage (`schemas.usage.RunUsage`, priced on this worker) to
the current window of its tenant and of its run's key (`schemas.usage.usage_window_key`):
one pipeline of `HINCRBY`s, so every worker, and a worker after a restart, adds to the
same counts, which the front doors read before they start a run (`client.budgets`). A
window's hash expires two windows after it began. Redis not answering costs a warning,
never the model step: the run's own budget is counted in its workflow, not here.

The counters carry `tenant` and `key` labels, bounded: past `max_labels` distinct values
in this process, further ones count as `other` (a key per customer must not grow the
worker's metrics without end).
"""

from __future__ import annotations

import functools
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

import redis.asyncio as aioredis
import structlog
from temporalio.common import MetricMeter

from agentkeel.activities.redis_errors import REDIS_ERRORS
from agentkeel.inference.metering import meter
from agentkeel.inference.usage import UsageBook, metering_usage
from agentkeel.schemas import metrics
from agentkeel.schemas.usage import UNNAMED_KEY, PriceTable, RunUsage, usage_window_key

log = structlog.get_logger(__name__)

OTHER = "other"
"""The label value of every tenant or key past a process's bound."""


@dataclass
class BoundedLabels:
    """Label values as they come, up to `limit` distinct ones; `other` after that."""

    limit: int
    seen: set[str] = field(default_factory=set)

    def __call__(self, value: str) -> str:
        if value in self.seen:
            return value
        if len(self.seen) >= self.limit:
            return OTHER
        self.seen.add(value)
        return value


@dataclass
class UsageLedger:
    """Counts one deployment's model usage by tenant and key: windows and metrics."""

    redis: aioredis.Redis | None
    deployment: str
    """The task queue: deployments sharing a Redis count apart."""
    window_s: int = 3600
    max_labels: int = 100
    _tenants: BoundedLabels = field(init=False)
    _keys: BoundedLabels = field(init=False)

    def __post_init__(self) -> None:
        self._tenants = BoundedLabels(self.max_labels)
        self._keys = BoundedLabels(self.max_labels)

    async def charge(
        self, usage: RunUsage, tenant: str, key: str | None, *, meter: MetricMeter | None
    ) -> None:
        """Add `usage` to the current window of `tenant` and of `key`, and to the counters."""
        if meter is not None:
            self.observe(meter, usage, tenant, key)
        if self.redis is None or usage.total_tokens == 0:
            return
        window = int(time.time()) // self.window_s
        owners = [("tenant", tenant)] + ([("key", key)] if key else [])
        micro_usd = round(usage.cost_usd * 1_000_000)
        try:
            async with self.redis.pipeline(transaction=False) as pipe:
                for scope, owner in owners:
                    name = usage_window_key(self.deployment, scope, owner, window)
                    pipe.hincrby(name, "tokens", usage.total_tokens)
                    pipe.hincrby(name, "micro_usd", micro_usd)
                    pipe.expire(name, 2 * self.window_s)
                await pipe.execute()
        except REDIS_ERRORS as exc:
            log.warning("usage_not_counted", tenant=tenant, error=repr(exc))

    def observe(self, meter: MetricMeter, usage: RunUsage, tenant: str, key: str | None) -> None:
        """Tokens and cost by tenant, key, tier, model (and kind of token)."""
        tokens = meter.create_counter(
            metrics.MODEL_TOKENS, "Model tokens used, by tenant, key, tier, model and kind"
        )
        cost = meter.create_counter(
            metrics.MODEL_COST, "Model cost in millionths of a US dollar, by tenant and key", "uUSD"
        )
        labels = {"tenant": self._tenants(tenant), "key": self._keys(key or UNNAMED_KEY)}
        for line in usage.by_model:
            at = {**labels, "tier": line.tier.value, "model": line.model}
            tokens.add(line.prompt_tokens, {**at, "kind": "prompt"})
            tokens.add(line.completion_tokens, {**at, "kind": "completion"})
            cost.add(round(line.cost_usd * 1_000_000), at)


class Asked(Protocol):
    tenant: str
    usage_key: str | None


class Counted(Protocol):
    usage: RunUsage | None


A = TypeVar("A", bound=Asked)
R = TypeVar("R", bound=Counted)


@dataclass
class UsageMetering:
    """What a model activity does with its calls' usage: price it, count it."""

    prices: PriceTable = field(default_factory=PriceTable)
    ledger: UsageLedger | None = None

    async def settle(self, book: UsageBook, asked: Asked) -> RunUsage | None:
        """The book priced (None when no model was called), and counted in the ledger."""
        if not book.lines:
            return None
        usage = book.usage(self.prices)
        if self.ledger is not None:
            await self.ledger.charge(usage, asked.tenant, asked.usage_key, meter=meter())
        return usage


class Metered(Protocol):
    usage_metering: UsageMetering


def counted(
    method: Callable[[Any, A], Awaitable[R]],
) -> Callable[[Any, A], Awaitable[R]]:
    """A model activity whose result says what its model calls used (`result.usage`):
    every call made while it runs, in tasks it starts too, is in its book."""

    @functools.wraps(method)
    async def activity_body(self: Metered, request: A) -> R:
        with metering_usage() as book:
            result = await method(self, request)
        result.usage = await self.usage_metering.settle(book, request)
        return result

    return activity_body
