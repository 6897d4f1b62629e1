"""The project's own Prometheus metrics: names, labels and buckets, one place for every emitter.

Each worker serves them at `AGENTKEEL_METRICS_ADDRESS` beside the Temporal SDK's own
(`settings.metrics`); counters carry the `_total` suffix there. Labels are low-cardinality
on purpose: tool names, tiers, layers and outcomes, never ids or questions; tenants and
keys only on the usage counters, bounded per process (`activities.usage_ledger`).
"""

from __future__ import annotations

from typing import Final

LAYER_DURATION: Final = "agentkeel_layer_duration_seconds"
"""Histogram per finished run and layer (`layer`: cache, route, plan, tools, respond, total,
ttft): the seeds' per-layer P50/P99 and each layer's share, live."""
CACHE_LOOKUPS: Final = "agentkeel_cache_lookups"
"""Counter per path-cache lookup: `tier` (exact, semantic, plan; `all` for a miss) and
`outcome` (hit, miss, unavailable)."""
ROUTER_DECISIONS: Final = "agentkeel_router_decisions"
"""Counter per route decided: `tier` that plans the run (rules, light, heavy)."""
ROUTER_OVERRIDES: Final = "agentkeel_router_overrides"
"""Counter per route whose intent the heavy model changed."""
POLICY_FALLBACKS: Final = "agentkeel_policy_fallbacks"
"""Counter per policy step the rules served while the model server was down (`step`)."""
TOOL_CALLS: Final = "agentkeel_tool_calls"
"""Counter per finished plan step: `tool` and `outcome` (the step's status)."""
SPECULATIVE_CALLS: Final = "agentkeel_speculative_calls"
"""Counter per speculative read: `outcome` (used, speculative_unused, speculative_failed).
The hit rate is used over all; the others are the wasted calls."""
DEADLINE_RUNS: Final = "agentkeel_deadline_runs"
"""Counter per run with a deadline: `met` (true, false)."""
DEADLINE_DECISIONS: Final = "agentkeel_deadline_decisions"
"""Counter per trade a deadline made: `kind` (tier, concurrency, drop, infeasible)."""
APPROVALS_REQUESTED: Final = "agentkeel_approvals_requested"
"""Counter per side effect that waited for an approver; minus the decided ones: waiting."""
APPROVALS_ENDED: Final = "agentkeel_approvals_ended"
"""Counter per approval wait that ended: `outcome` (approved, rejected, timed_out)."""
MODEL_TOKENS: Final = "agentkeel_model_tokens"
"""Counter of model tokens: `tenant`, `key` (bounded: `other` past
`AGENTKEEL_USAGE_METRIC_LABELS` distinct values), `tier`, `model`, `kind` (prompt,
completion)."""
MODEL_COST: Final = "agentkeel_model_cost_micro_usd"
"""Counter of model cost in millionths of a US dollar by the price table: `tenant`, `key`,
`tier`, `model`."""

LAYER_BUCKETS_S: Final = (
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 120.0,
)  # fmt: skip
"""From a cache hit (milliseconds) to a model planning on a CPU (tens of seconds)."""
