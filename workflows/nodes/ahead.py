"""What a run does ahead of its plan: speculative reads, and fitting the plan to a deadline.

Used by the `plan`, `execute`, `respond` and `store` nodes; each behaviour behind its own
`since()` gate, asked only by runs that use it (a deadline given, reads
predicted), so every history recorded before them replays as it ran.
"""

from __future__ import annotations

from typing import Any

from temporalio import workflow

from agentkeel.schemas.plan.model import Plan
from agentkeel.schemas.result import StepOutcome, StepStatus
from agentkeel.schemas.route import Route
from agentkeel.schemas.speculation import PredictedCall, SpeculationReport
from agentkeel.workflows.deadline import DEADLINE_PATCH, Deadline
from agentkeel.workflows.release import since
from agentkeel.workflows.speculation import (
    EARLY_SPECULATION_PATCH,
    GIVEN_READS_PATCH,
    LOCAL_SPECULATION_PATCH,
    SPECULATION_PATCH,
    Speculation,
)
from agentkeel.workflows.state import AgentState


async def deadline_of(state: AgentState) -> Deadline | None:
    """The run's deadline, with the workers' latency estimates read (once); None: none."""
    context = state["context"]
    budget = state["request"].options.deadline_ms
    if budget is None or not context.authority:
        return None
    if context.deadline is None:
        if not since(DEADLINE_PATCH):
            return None
        # From the workflow's start: time queued before its first task counts too.
        context.deadline = Deadline(budget_ms=float(budget), started_at=workflow.info().start_time)
    await context.deadline.load()
    return context.deadline


def speculate_at_once(
    state: AgentState, predicted: list[PredictedCall], *, local: bool = False
) -> None:
    """Start the reads the question predicts at the run's first moment (in the workflow
    task that also schedules the route), so they overlap the router and the planner; the
    plan adopts the ones it makes and the rest are cancelled. Runs with a deadline keep
    the later start, where the deadline has chosen a tier first. `local`: this worker
    serves the policy steps and runs the reads (`speculation.LOCAL_SPECULATION_PATCH`)."""
    context = state["context"]
    request = state["request"]
    if (
        not predicted
        or not request.options.speculate
        or request.options.deadline_ms is not None
        or context.speculation is not None
        or not context.authority
        or not since(EARLY_SPECULATION_PATCH)
    ):
        return
    _start_predicted(state, predicted, local=local and since(LOCAL_SPECULATION_PATCH))


def _start_predicted(
    state: AgentState, predicted: list[PredictedCall], *, local: bool = False
) -> None:
    """Start the predicted reads as the round's speculation, given to its planners."""
    context = state["context"]
    request = state["request"]
    context.speculation = Speculation()
    actor = request.actor.model_dump(mode="json")
    started = context.speculation.start(
        predicted, context.tool_queue, actor, request.tenant, local=local
    )
    if since(GIVEN_READS_PATCH):  # asked at the run's start, with the release's id
        context.speculation.give()
    context.calls_used += started  # they count against the run's tool-call limit


def given_reads(state: AgentState) -> list[PredictedCall]:
    """The reads started from the request, which the run's first planners build on."""
    speculation = state["context"].speculation
    return list(speculation.given) if speculation is not None else []


async def before_planning(state: AgentState) -> Route | None:
    """Pick the tier that can meet the deadline (or refuse at once), then start the
    predicted reads; the route to plan with when the tier changed (None: as it is)."""
    context = state["context"]
    predicted = state.get("speculate") or []
    request = state["request"]
    deadline = await deadline_of(state)
    route = state["route"]
    tier = route.tier
    if deadline is not None:
        guess = max((deadline.tool_ms(c.tool) for c in predicted), default=0.0)
        tier = deadline.before_planning(route.tier, guess)
        if deadline.refused is not None:
            return None  # said at once: no read starts, no model plans
    if (
        predicted
        and request.options.speculate
        and context.speculation is None
        and since(SPECULATION_PATCH)
    ):
        _start_predicted(state, predicted)
    if tier is route.tier:
        return None
    return route.model_copy(update={"tier": tier, "reason": f"{route.reason}; deadline: {tier}"})


def fit_to_deadline(state: AgentState, plan: Plan) -> tuple[Plan, set[str]]:
    """The plan to run (optional steps left out when the deadline needs it) and what was."""
    context = state["context"]
    deadline = context.deadline
    if deadline is None or state.get("replans", 0) > 0:
        return plan, set()  # trades are made once, for the first plan; a replan keeps them
    cap = context.concurrency or state["request"].options.max_concurrency
    dropped = deadline.fit(plan, cap, state["route"].tier)
    if deadline.concurrency:
        context.concurrency = deadline.concurrency
    context.stale_ok = deadline.stale_ok
    if deadline.refused is not None:
        return Plan(rationale=plan.rationale), {s.id for s in plan.steps}
    kept = [s for s in plan.steps if s.id not in dropped]
    return plan.model_copy(update={"steps": kept}), dropped


def refused(state: AgentState) -> bool:
    """The deadline was declared unmeetable: the run answers with that, at once."""
    deadline = state["context"].deadline
    return deadline is not None and deadline.refused is not None


def prune_speculation(state: AgentState, plan: Plan) -> None:
    """The plan is known: cancel the speculative reads of tools it never calls."""
    speculation = state["context"].speculation
    if speculation is not None:
        speculation.prune({s.tool for s in plan.steps})


def passed_over(
    plan: Plan, ran: list[StepOutcome], left: set[str], attempt: int, why: str
) -> list[StepOutcome]:
    """Every step's outcome in plan order: those that ran, and those left out (skipped)."""
    by_id = {o.id: o for o in ran}
    now = workflow.now()
    out: list[StepOutcome] = []
    for step in plan.steps:
        if step.id in by_id:
            out.append(by_id[step.id])
        elif step.id in left:
            out.append(
                StepOutcome(
                    id=step.id,
                    tool=step.tool,
                    attempt=attempt,
                    status=StepStatus.SKIPPED,
                    skipped_because=why,
                    started_at=now,
                    finished_at=now,
                )
            )
    return out


async def end_speculation(state: AgentState, outcomes: list[StepOutcome]) -> dict[str, Any]:
    """Cancel the speculative reads no step used; the state's report and saved time."""
    context = state["context"]
    speculation = context.speculation
    if speculation is None:
        return {}
    context.speculation = None
    report = await speculation.finish()
    # A call a step took was counted twice, by its start here and by the step's.
    context.calls_used = max(context.calls_used - report.hits, 0)
    for outcome in outcomes:
        if outcome.id in speculation.served:
            outcome.speculative = True
    earlier: SpeculationReport | None = state.get("speculation")
    if earlier is not None:
        report = SpeculationReport(calls=[*earlier.calls, *report.calls])
    timings = state["timings"].model_copy() if "timings" in state else None
    update: dict[str, Any] = {"speculation": report}
    if timings is not None:
        timings.speculation_saved += round(speculation.saved_ms, 1)
        update["timings"] = timings
    return update
