"""Budgets per key and tenant per window, as the front doors check them before a run starts.

The inference workers add every model activity's usage to the window of its tenant and of
its run's key in Redis (`activities.usage_ledger`); `AgentClient.start` (and through it the
gateway and MCP's `start_run`) reads both windows first and refuses a new run whose key or
tenant has spent its budget, with `BudgetExhaustedError` (the gateway answers `429` with
`Retry-After`: the seconds until the window ends). Runs already started finish: each has
its own budget (`options.budget`). Redis not answering refuses nothing (the budget is
then not enforced, and a warning says so), as every other use of Redis by the client.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import redis.asyncio as aioredis
import structlog
from redis.exceptions import RedisError

from agentkeel.schemas.errors import BUDGET_EXHAUSTED
from agentkeel.schemas.request import AgentRequest
from agentkeel.schemas.usage import RunBudget, usage_window_key
from agentkeel.settings.model import Settings

__all__ = ["BudgetExhaustedError", "WindowBudgets", "WindowLimits"]

log = structlog.get_logger(__name__)


class BudgetExhaustedError(Exception):
    """A key's or tenant's model budget for this window is spent: no new run until it ends."""

    type = BUDGET_EXHAUSTED

    def __init__(
        self, scope: str, owner: str, *, spent: str, limit: str, window_s: int, retry_after_s: int
    ) -> None:
        who = "this key" if scope == "key" else f"tenant {owner!r}"
        super().__init__(
            f"{who} has used {spent} of its {limit} per {window_s}s window; "
            f"try again in {retry_after_s}s"
        )
        self.scope = scope
        self.owner = owner
        self.spent = spent
        self.limit = limit
        self.window_s = window_s
        self.retry_after_s = retry_after_s


@dataclass(frozen=True)
class WindowLimits:
    """`AGENTKEEL_BUDGET_*` (0: no limit)."""

    window_s: int
    tokens_per_key: int = 0
    tokens_per_tenant: int = 0
    usd_per_key: float = 0.0
    usd_per_tenant: float = 0.0

    @classmethod
    def from_settings(cls, settings: Settings) -> WindowLimits:
        return cls(
            window_s=settings.budget_window_s,
            tokens_per_key=settings.budget_tokens_per_key,
            tokens_per_tenant=settings.budget_tokens_per_tenant,
            usd_per_key=settings.budget_usd_per_key,
            usd_per_tenant=settings.budget_usd_per_tenant,
        )

    @property
    def any(self) -> bool:
        return any(
            (self.tokens_per_key, self.tokens_per_tenant, self.usd_per_key, self.usd_per_tenant)
        )


@dataclass
class WindowBudgets:
    """Reads the current windows of a request's tenant and key; refuses past a limit."""

    redis: aioredis.Redis
    deployment: str
    limits: WindowLimits

    async def check(self, request: AgentRequest) -> None:
        """Raises `BudgetExhaustedError` where the request's key or tenant has spent its
        budget in the current window."""
        if not self.limits.any:
            return
        now = time.time()
        window = int(now) // self.limits.window_s
        retry_after = max(1, math.ceil((window + 1) * self.limits.window_s - now))
        scopes = [
            ("tenant", request.tenant, self.limits.tokens_per_tenant, self.limits.usd_per_tenant)
        ]
        if request.usage_key is not None:
            scopes.insert(
                0, ("key", request.usage_key, self.limits.tokens_per_key, self.limits.usd_per_key)
            )
        for scope, owner, tokens, usd in scopes:
            if not tokens and not usd:
                continue
            try:
                used = await self.redis.hmget(
                    usage_window_key(self.deployment, scope, owner, window), "tokens", "micro_usd"
                )
            except (RedisError, OSError) as exc:
                log.warning("usage_budget_unchecked", scope=scope, error=repr(exc))
                return
            spent_tokens, spent_micro = (int(v or 0) for v in used)
            over = None
            if tokens and spent_tokens >= tokens:
                over = (f"{spent_tokens} tokens", f"{tokens} tokens")
            elif usd and spent_micro >= usd * 1_000_000:
                over = (f"${spent_micro / 1_000_000:.6f}", f"${usd:.6f}")
            if over is not None:
                raise BudgetExhaustedError(
                    scope,
                    owner,
                    spent=over[0],
                    limit=over[1],
                    window_s=self.limits.window_s,
                    retry_after_s=retry_after,
                )


def held_under(request: AgentRequest, ceiling: RunBudget | None) -> AgentRequest:
    """`request` with its run budget held under the deployment's (`ceiling`, a ceiling: a
    request may ask for less, never more; one that asks for none gets the ceiling)."""
    if ceiling is None:
        return request
    asked = request.options.budget
    budget = ceiling if asked is None else asked.within(ceiling)
    options = request.options.model_copy(update={"budget": budget})
    return request.model_copy(update={"options": options})
