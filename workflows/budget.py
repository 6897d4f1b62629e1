"""A run's model budget: what its model calls used so far, and what the next call may be.

Every model activity's result says what its calls used (`usage`, counted and priced on
the inference worker); the run adds it up here (`RunContext.usage`), and the sum is the
result's `usage`. With a budget (`options.budget`), each model call first asks
`budget_gate`: below `degrade_at` of the budget the call goes as planned; past it the
call goes to the light tier (the route a heavy run would plan, judge or answer with is
sent as the light tier's); once the budget is spent the run stops, non-retryable, with
`BudgetExhausted` and what it did so far (`workflows.nodes.run_record.stop_for_budget`).

Stopping is a command a run recorded before this change never gave: it is gated by
`RUN_BUDGET_PATCH`, asked only by a run with a budget.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any, TypeVar

from pydantic import BaseModel
from temporalio import workflow

from agentkeel.schemas.route import Route, Tier
from agentkeel.schemas.usage import RunBudget, RunUsage
from agentkeel.workflows.dag.run_context import RunContext
from agentkeel.workflows.release import since

RUN_BUDGET_PATCH = "run-budget-v1"
"""Runs with `options.budget` degrade to the light tier and stop with `BudgetExhausted`."""

Asked = TypeVar("Asked", bound=BaseModel)


class BudgetDecision(StrEnum):
    GO = "go"
    LIGHT = "light"
    """Past `degrade_at`: the call goes to the light tier."""
    STOP = "stop"
    """Spent: no more model calls."""


def decide(budget: RunBudget | None, usage: RunUsage) -> BudgetDecision:
    """What the next model call of a run that has used `usage` may be."""
    if budget is None:
        return BudgetDecision.GO
    share = budget.share_spent(usage)
    if share >= 1.0:
        return BudgetDecision.STOP
    if share >= budget.degrade_at:
        return BudgetDecision.LIGHT
    return BudgetDecision.GO


def add_usage(context: RunContext, answered: Any) -> None:
    """Add what a model step's answer says its calls used to the run's sum."""
    usage: RunUsage | None = getattr(answered, "usage", None)
    if usage is not None:
        context.usage = context.usage.plus(usage)


def budget_gate(context: RunContext, request: Asked) -> tuple[BudgetDecision, Asked]:
    """The decision for the next model call, and its request: as it was, or (`LIGHT`) with
    its route on the light tier."""
    budget = context.request.options.budget
    if budget is None or not since(RUN_BUDGET_PATCH):
        return BudgetDecision.GO, request
    decision = decide(budget, context.usage)
    if decision is not BudgetDecision.LIGHT:
        return decision, request
    route: Route | None = getattr(request, "route", None)
    if route is None or route.tier is not Tier.HEAVY:
        return decision, request  # the router and the light tier are the light tier already
    if not context.budget_degraded:
        context.budget_degraded = True
        workflow.logger.info("model budget: the run goes on with the light tier")
    return decision, request.model_copy(
        update={"route": route.model_copy(update={"tier": Tier.LIGHT})}
    )


def exhausted_message(budget: RunBudget, usage: RunUsage) -> str:
    limits = []
    if budget.tokens is not None:
        limits.append(f"{usage.total_tokens} of {budget.tokens} tokens")
    if budget.cost_usd is not None:
        limits.append(f"${usage.cost_usd:.6f} of ${float(budget.cost_usd):.6f}")
    return f"the run's model budget is spent ({', '.join(limits)})"


DEGRADED_WARNING = "model budget: past its degrade point, the run used the light tier"
