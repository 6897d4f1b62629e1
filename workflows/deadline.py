"""Deadline-aware runs: a plan fitted to `options.deadline_ms` from measured latencies.

A run with a deadline reads the workers' recent latencies once (`latency_estimates`, a
local activity; defaults when Redis is out of reach) and then trades, in this order of
preference, only as much as the estimate needs: the light tier plans instead of the heavy
one; the concurrency cap is raised; cached reads may be served stale (inside their
stale-while-revalidate window); steps the plan marks `optional` are left out (with
their dependants), the costliest first. When even that does not fit, it says so at once
instead of running late. Every trade is listed in `result.deadline.decisions` and the
answer says what it left out. The clock starts when the workflow was started (time queued
before its first task counts). A wait costs its length; a watch, or a wait until a time,
cannot be planned against a budget: such a step goes when optional, else the run says at
once that it cannot meet the deadline.
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError

from agentkeel.schemas import names
from agentkeel.schemas.deadline import (
    DeadlineDecision,
    DeadlineReport,
    DecisionKind,
    LatencyEstimates,
    LatencyEstimatesInput,
)
from agentkeel.schemas.plan.model import Plan, PlanStep
from agentkeel.schemas.plan.validation import dependencies
from agentkeel.schemas.route import Tier
from agentkeel.schemas.tools import TOOLS
from agentkeel.schemas.tools.timers import WAIT

DEADLINE_PATCH = "deadline-v1"
"""Runs with `options.deadline_ms` plan to meet it."""

ESTIMATES_TIMEOUT = timedelta(seconds=2)
MAX_CONCURRENCY = 64
PER_STEP_MS = 12.0
"""What each tool step adds beyond its own work: schedule, dispatch, a workflow task."""
FIXED_MS = 40.0
"""What a run adds beyond its layers: first and last workflow tasks, the record."""


@dataclass
class Deadline:
    """A run's budget and the trades made to meet it (in the run's context)."""

    budget_ms: float
    started_at: datetime
    estimates: LatencyEstimates | None = None
    decisions: list[DeadlineDecision] = field(default_factory=list)
    left_out: list[str] = field(default_factory=list)
    concurrency: int | None = None
    refused: str | None = None
    """Set when the deadline cannot be met: the answer, given at once."""
    stale_ok: bool = False
    """The run's cached reads may be served stale (`ActorScoped.stale_ok`)."""
    estimated_ms: float | None = None

    def remaining_ms(self) -> float:
        return self.budget_ms - (workflow.now() - self.started_at).total_seconds() * 1000

    async def load(self) -> LatencyEstimates:
        """The workers' recent latencies, read once; the defaults if they cannot be read."""
        if self.estimates is None:
            try:
                self.estimates = await workflow.execute_local_activity(
                    names.LATENCY_ESTIMATES,
                    LatencyEstimatesInput(tools=sorted(TOOLS)),
                    result_type=LatencyEstimates,
                    start_to_close_timeout=ESTIMATES_TIMEOUT,
                    retry_policy=RetryPolicy(maximum_attempts=2),
                    summary="latency estimates",
                )
            except ActivityError as exc:
                workflow.logger.warning("latency estimates unavailable: %s", exc.cause)
                self.estimates = LatencyEstimates()
        return self.estimates

    def tool_ms(self, tool: str) -> float:
        found = self.estimates.tools.get(tool) if self.estimates else None
        if found is None:
            spec = TOOLS.get(tool)
            return float(spec.expected_ms if spec else 20)
        return found.p90_ms if found.samples >= 5 else found.p50_ms

    def model_ms(self, step: str, tier: Tier) -> float:
        found = self.estimates.models.get(f"{step}:{tier.value}") if self.estimates else None
        return found.p50_ms if found is not None else 0.0

    def report(self) -> DeadlineReport:
        """Met: answered in full (no refusal) within the budget, counted from the start."""
        elapsed = (workflow.now() - self.started_at).total_seconds() * 1000
        return DeadlineReport(
            budget_ms=self.budget_ms,
            met=self.refused is None and elapsed <= self.budget_ms,
            estimated_ms=None if self.estimated_ms is None else _finite(self.estimated_ms),
            decisions=list(self.decisions),
            source=self.estimates.source if self.estimates else "defaults",
        )

    def _refuse(self, estimated_ms: float) -> None:
        """Nothing fits: say so now, with what it would take."""
        left = max(self.remaining_ms(), 0.0)
        took = "an open-ended wait" if math.isinf(estimated_ms) else f"about {estimated_ms:.0f} ms"
        self.refused = (
            f"I can't answer within {self.budget_ms:.0f} ms: the quickest way I have takes "
            f"{took}, and {left:.0f} ms are left, so I stopped rather than answer late."
        )
        self.decisions.append(
            DeadlineDecision(
                kind=DecisionKind.INFEASIBLE,
                detail=f"estimated {took}, {left:.0f} ms left",
            )
        )

    # -- before planning ----------------------------------------------------------------------
    def before_planning(self, tier: Tier, tools_guess_ms: float) -> Tier:
        """The tier to plan with (`choose_tier`); refuses at once, before any model or tool
        call, when even the lighter tier's plan and answer and the predicted reads cannot
        fit the time left."""
        tier = self.choose_tier(tier, tools_guess_ms)
        quickest = (
            self.model_ms("plan", tier) + self.model_ms("respond", tier) + tools_guess_ms + FIXED_MS
        )
        if quickest > self.remaining_ms():
            self._refuse(quickest)
        return tier

    def choose_tier(self, tier: Tier, tools_guess_ms: float) -> Tier:
        """The light tier when the heavy one's plan and answer would not fit (and light's do)."""
        if tier is not Tier.HEAVY:
            return tier
        heavy = self.model_ms("plan", Tier.HEAVY) + self.model_ms("respond", Tier.HEAVY)
        light = self.model_ms("plan", Tier.LIGHT) + self.model_ms("respond", Tier.LIGHT)
        if heavy + tools_guess_ms + FIXED_MS <= self.remaining_ms() or light >= heavy:
            return tier
        self.decisions.append(
            DeadlineDecision(
                kind=DecisionKind.TIER,
                detail=f"light tier plans and answers (heavy ~{heavy:.0f} ms, "
                f"light ~{light:.0f} ms)",
                saved_ms=round(heavy - light, 1),
            )
        )
        return Tier.LIGHT

    # -- once the plan is known ---------------------------------------------------------------
    def fit(self, plan: Plan, cap: int, respond_tier: Tier) -> set[str]:
        """Trade until `plan` fits the time left; the steps left out (empty: none). Sets
        `refused` when nothing fits."""
        budget = self.remaining_ms() - self.model_ms("respond", respond_tier) - FIXED_MS
        estimate = self.plan_ms(plan, cap, set())
        if estimate > budget and cap < MAX_CONCURRENCY:
            wider = min(MAX_CONCURRENCY, max(len(plan.steps), cap))
            faster = self.plan_ms(plan, wider, set())
            if faster < estimate:
                self.concurrency = wider
                self.decisions.append(
                    DeadlineDecision(
                        kind=DecisionKind.CONCURRENCY,
                        detail=f"concurrency cap {cap} -> {wider}",
                        saved_ms=round(estimate - faster, 1),
                    )
                )
                cap, estimate = wider, faster
        if estimate > budget and not self.stale_ok:
            cached = sorted({s.tool for s in plan.steps if _may_be_stale(s.tool)})
            if cached:
                # What a stale result saves depends on what is cached: unknown until the call,
                # so the estimate stands and the optional steps may still go.
                self.stale_ok = True
                self.decisions.append(
                    DeadlineDecision(
                        kind=DecisionKind.STALE,
                        detail="results of " + ", ".join(cached) + " may be served stale, "
                        "inside their stale-while-revalidate window",
                    )
                )
        dropped: set[str] = set()
        while estimate > budget:
            best: tuple[float, str] | None = None
            for step in plan.steps:
                if droppable(plan, step, dropped):
                    without = self.plan_ms(plan, cap, dropped | {step.id})
                    if best is None or without < best[0]:
                        best = (without, step.id)
            if best is None or best[0] >= estimate:
                break
            gone = _with_dependants(plan, {best[1]}) - dropped
            dropped |= gone
            tools = ", ".join(f"{s.id} ({s.tool})" for s in plan.steps if s.id in gone)
            self.decisions.append(
                DeadlineDecision(
                    kind=DecisionKind.DROP,
                    detail=f"left out {tools}",
                    saved_ms=_finite(estimate - best[0]),
                    steps=sorted(gone),
                )
            )
            estimate = best[0]
        self.estimated_ms = estimate + self.model_ms("respond", respond_tier) + FIXED_MS
        if estimate > budget:
            self._refuse(self.estimated_ms)
            return set()
        if dropped:
            left = ", ".join(s.tool for s in plan.steps if s.id in dropped)
            self.left_out.append(f"(To answer within {self.budget_ms:.0f} ms I left out: {left}.)")
        return dropped

    def plan_ms(self, plan: Plan, cap: int, dropped: set[str]) -> float:
        """The plan's makespan under `cap` by these estimates (critical path first, as the
        scheduler starts steps; a `for_each` counted as one round of its tool)."""
        steps = [s for s in plan.steps if s.id not in _with_dependants(plan, dropped)]
        deps = {s.id: set(dependencies(s)) & {o.id for o in steps} for s in steps}
        cost = {s.id: self.step_ms(s) for s in steps}
        done: dict[str, float] = {}
        running: list[tuple[float, str]] = []
        now, waiting = 0.0, [s.id for s in steps]
        while waiting or running:
            ready = [i for i in waiting if deps[i] <= done.keys()]
            ready.sort(key=lambda i: -cost[i])
            while ready and len(running) < cap:
                step = ready.pop(0)
                waiting.remove(step)
                heapq.heappush(running, (now + cost[step], step))
            if not running:
                break  # (a cycle: validation refuses it before this matters)
            now, finished = heapq.heappop(running)
            done[finished] = now
        return now

    def step_ms(self, step: PlanStep) -> float:
        """A step's expected time: its tool's, a wait's own length; a watch has no end."""
        if step.repeat is not None:
            return math.inf
        if step.tool == WAIT.name:
            seconds = step.args.get("seconds")
            if isinstance(seconds, int | float) and not isinstance(seconds, bool):
                return float(seconds) * 1000 + PER_STEP_MS
            return math.inf  # "until" a time, or a reference: not something to bet on
        return self.tool_ms(step.tool) + PER_STEP_MS


def _may_be_stale(tool: str) -> bool:
    spec = TOOLS.get(tool)
    return spec is not None and spec.idempotent and spec.cache_ttl is not None


def _finite(ms: float) -> float | None:
    """Milliseconds as reported: None for an open-ended wait."""
    return None if math.isinf(ms) else round(ms, 1)


def droppable(plan: Plan, step: PlanStep, dropped: set[str]) -> bool:
    """An optional step may go only with dependants that are all optional too: leaving it
    out must never take a step the plan needs with it."""
    if not step.optional or step.id in dropped:
        return False
    by_id = {s.id: s for s in plan.steps}
    return all(by_id[i].optional for i in _with_dependants(plan, {step.id}) - {step.id})


def _with_dependants(plan: Plan, roots: set[str]) -> set[str]:
    out = set(roots)
    changed = True
    while changed:
        changed = False
        for step in plan.steps:
            if step.id not in out and set(dependencies(step)) & out:
                out.add(step.id)
                changed = True
    return out
