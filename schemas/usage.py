"""What a run's model calls used: tokens by tier and model, their cost, and its budgets.

`ModelUsage` is one (tier, model) line; `RunUsage` sums the lines of a model activity (its
result's `usage`) or of a whole run (`AgentResult.usage`). Counts are the model server's
own (`usage` of an OpenAI-compatible answer, vLLM's token ids); a server that gives none is
counted by an estimate and the line says `estimated`. Cost is priced on the inference
worker from its price table (`AGENTKEEL_MODEL_PRICES`); a model without a price costs 0
and the line says `priced: false`. A cached answer used no model: zero, `cached: true`.

`RunBudget` is a run's own limit (`options.budget`, else `AGENTKEEL_RUN_BUDGET_*`);
`usage_window_key` is where every worker adds a tenant's and a key's use per window in
Redis, and where the front doors read it before starting a run (`docs/usage.md`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Self

from pydantic import BaseModel, ConfigDict, Field, StrictFloat, StrictInt

from agentkeel.schemas.route import Tier


class ModelUsage(BaseModel):
    """The tokens one model of one tier used in a run (or one activity), and their cost."""

    tier: Tier
    model: str
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    estimated: bool = False
    """Some of these counts are estimates: the server gave no `usage` for a call."""
    priced: bool = True
    """False where the price table has no price for this model (its cost counts as 0)."""

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


class RunUsage(BaseModel):
    """Tokens and cost of a run's model calls, in total and by (tier, model)."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0
    cost_usd: float = 0.0
    calls: int = 0
    by_model: list[ModelUsage] = Field(default_factory=list)
    cached: bool = False
    """The answer came from the cache: no model was called for it, it cost nothing."""

    @classmethod
    def of(cls, lines: list[ModelUsage]) -> Self:
        """The sum of `lines`, one line per (tier, model) in the order first seen."""
        merged: dict[tuple[Tier, str], ModelUsage] = {}
        for line in lines:
            key = (line.tier, line.model)
            seen = merged.get(key)
            if seen is None:
                merged[key] = line.model_copy()
                continue
            seen.calls += line.calls
            seen.prompt_tokens += line.prompt_tokens
            seen.completion_tokens += line.completion_tokens
            seen.cost_usd += line.cost_usd
            seen.estimated = seen.estimated or line.estimated
            seen.priced = seen.priced and line.priced
        by_model = list(merged.values())
        prompt = sum(m.prompt_tokens for m in by_model)
        completion = sum(m.completion_tokens for m in by_model)
        return cls(
            prompt_tokens=prompt,
            completion_tokens=completion,
            total_tokens=prompt + completion,
            cost_usd=round(sum(m.cost_usd for m in by_model), 9),
            calls=sum(m.calls for m in by_model),
            by_model=by_model,
        )

    def plus(self, other: RunUsage | None) -> RunUsage:
        """This usage and `other` together (None adds nothing)."""
        if other is None or not other.by_model:
            return self
        return RunUsage.of([*self.by_model, *other.by_model])


class RunBudget(BaseModel):
    """What one run may spend on models. Before each model call the run compares what it
    has used with the budget: from `degrade_at` of it on, the run's remaining calls go to
    the light tier; once it is spent, the run stops with `BudgetExhausted` (the error's
    details hold what it did so far). The call that crosses the line is not cut short, so
    a run may end past its budget by at most one call."""

    model_config = ConfigDict(extra="forbid")

    tokens: StrictInt | None = Field(default=None, ge=1)
    """Prompt and completion tokens of every model call of the run together."""
    cost_usd: StrictFloat | StrictInt | None = Field(default=None, gt=0)
    """Cost of the run's model calls by the inference workers' price table."""
    degrade_at: float = Field(default=0.8, ge=0.0, le=1.0)
    """The share of the budget after which the run uses the light tier only."""

    def within(self, ceiling: RunBudget) -> RunBudget:
        """This budget held under `ceiling` (the deployment's): each limit the lower of the
        two, a limit only one of them sets kept, and the earlier degrade point."""

        def lower(mine: Any, theirs: Any) -> Any:
            return theirs if mine is None else mine if theirs is None else min(mine, theirs)

        return RunBudget(
            tokens=lower(self.tokens, ceiling.tokens),
            cost_usd=lower(self.cost_usd, ceiling.cost_usd),
            degrade_at=min(self.degrade_at, ceiling.degrade_at),
        )

    def share_spent(self, usage: RunUsage) -> float:
        """The largest share of a limit `usage` has used (0 without limits)."""
        shares = [0.0]
        if self.tokens is not None:
            shares.append(usage.total_tokens / self.tokens)
        if self.cost_usd is not None:
            shares.append(usage.cost_usd / float(self.cost_usd))
        return max(shares)


@dataclass(frozen=True)
class ModelPrice:
    """US dollars per million tokens, prompt and completion."""

    prompt_per_million: float
    completion_per_million: float

    def cost(self, prompt_tokens: int, completion_tokens: int) -> float:
        return (
            prompt_tokens * self.prompt_per_million
            + completion_tokens * self.completion_per_million
        ) / 1_000_000


@dataclass(frozen=True)
class PriceTable:
    """Prices by model name as served; `*` prices every model not named."""

    prices: Mapping[str, ModelPrice] = field(default_factory=dict)

    def price_of(self, model: str) -> ModelPrice | None:
        return self.prices.get(model) or self.prices.get("*")

    def priced(self, usage: RunUsage) -> RunUsage:
        """`usage` with each line's cost by this table (0 and `priced: false` without a
        price for its model)."""
        lines = []
        for line in usage.by_model:
            price = self.price_of(line.model)
            cost = 0.0 if price is None else price.cost(line.prompt_tokens, line.completion_tokens)
            lines.append(line.model_copy(update={"cost_usd": cost, "priced": price is not None}))
        return RunUsage.of(lines)


def parse_prices(text: str) -> PriceTable:
    """`AGENTKEEL_MODEL_PRICES`: `model=prompt:completion` entries (US dollars per million
    tokens) separated by commas, e.g. `gpt-4.1-mini=0.40:1.60,*=0`.

    Raises:
        ValueError: an entry that is not `name=number:number`, a negative price, a model
            named twice.
    """
    prices: dict[str, ModelPrice] = {}
    for entry in (e.strip() for e in text.split(",")):
        if not entry:
            continue
        name, sep, numbers = entry.rpartition("=")
        prompt, colon, completion = numbers.partition(":")
        name = name.strip()
        if not sep or not colon or not name:
            raise ValueError(f"{entry!r} is not model=prompt:completion (USD per 1M tokens)")
        try:
            price = ModelPrice(float(prompt), float(completion))
        except ValueError:
            raise ValueError(f"{entry!r}: prices must be numbers") from None
        both = (price.prompt_per_million, price.completion_per_million)
        if not all(math.isfinite(p) and p >= 0 for p in both):
            raise ValueError(f"{entry!r}: prices must be finite and not negative")
        if name in prices:
            raise ValueError(f"model {name!r} is priced twice")
        prices[name] = price
    return PriceTable(prices)


def usage_window_key(deployment: str, scope: str, owner: str, window: int) -> str:
    """The Redis hash of one tenant's (`scope` "tenant") or key's ("key") use in window
    number `window` (seconds since the epoch // the window's length): fields `tokens` and
    `micro_usd` (cost in millionths of a dollar), added to by every inference worker."""
    return f"agentkeel:usage:{{{deployment}}}:{scope}:{owner}:{window}"


UNNAMED_KEY = "none"
"""The key a run without `usage_key` is counted under (metrics; no key budget applies)."""
