"""The settings of usage and budgets: the price table, a run's default budget, and the
budgets per key and tenant per window (`docs/usage.md`).

A base of `settings.model.Settings` (each field is `AGENTKEEL_<FIELD>`). The inference
workers price and count (`model_prices`, `budget_window`, `usage_metric_labels`); the front
doors (`AgentClient`, the gateway, MCP) apply the run budget and refuse runs past a
window's budget.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator, BaseModel, Field

from agentkeel.schemas.usage import PriceTable, RunBudget, parse_prices
from agentkeel.settings.env import Accepts
from agentkeel.settings.types import (
    ENV_PREFIX,
    MODEL_CONFIG,
    AtLeastOne,
    Duration,
    Fraction,
    NotNegative,
    parse_duration,
)


def _prices(raw: str) -> str:
    parse_prices(raw)  # a bad table stops the process at start, naming the entry
    return raw


PriceText = Annotated[
    str,
    AfterValidator(_prices),
    Accepts("model=prompt:completion entries (USD per million tokens), comma-separated"),
]

__all__ = ["UsageSettings"]


class UsageSettings(BaseModel):
    """Prices of the models, and how much a run, a key and a tenant may spend."""

    model_config = MODEL_CONFIG

    model_prices: PriceText = ""
    """The price table: `model=prompt:completion` entries in US dollars per million tokens,
    comma-separated (`gpt-4.1-mini=0.40:1.60,Qwen/Qwen3-8B=0.05:0.20`); `*` prices every
    model not named. Read by the inference workers, which price each call's tokens; a
    model without a price costs 0 (its usage says `priced: false`)."""
    run_budget_tokens: NotNegative = 0
    """A run's model tokens, where its request sets no `options.budget` (applied by
    `AgentClient`, the gateway and MCP when they start it). 0: no limit."""
    run_budget_usd: float = Field(default=0.0, ge=0)
    """A run's model cost in US dollars, as `run_budget_tokens`. 0: no limit."""
    run_budget_degrade_at: Fraction = 0.8
    """The share of a run's budget after which it uses the light tier only."""
    budget_window: Duration = "1h"
    """The window of the budgets per key and tenant (fixed windows, from the epoch)."""
    budget_tokens_per_key: NotNegative = 0
    """Model tokens the runs of one key (`AgentRequest.usage_key`; the gateway's API key)
    may use per window; past it new runs are refused. 0: no limit."""
    budget_tokens_per_tenant: NotNegative = 0
    """Model tokens the runs of one tenant may use per window. 0: no limit."""
    budget_usd_per_key: float = Field(default=0.0, ge=0)
    """Model cost in US dollars per key per window. 0: no limit."""
    budget_usd_per_tenant: float = Field(default=0.0, ge=0)
    """Model cost in US dollars per tenant per window. 0: no limit."""
    usage_metric_labels: AtLeastOne = 100
    """Distinct tenants (and keys) an inference worker labels its usage counters with;
    further ones count as `other`."""

    def price_table(self) -> PriceTable:
        return parse_prices(self.model_prices)

    @property
    def budget_window_s(self) -> int:
        return max(1, int(parse_duration(self.budget_window, ENV_PREFIX + "BUDGET_WINDOW")))

    def run_budget(self) -> RunBudget | None:
        """The default budget of a run (None: no limit)."""
        if not self.run_budget_tokens and not self.run_budget_usd:
            return None
        return RunBudget(
            tokens=self.run_budget_tokens or None,
            cost_usd=self.run_budget_usd or None,
            degrade_at=self.run_budget_degrade_at,
        )
