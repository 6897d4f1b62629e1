"""The `execute` node: the round's plan through the DAG scheduler, inline in the workflow."""

from __future__ import annotations

from typing import Any

from temporalio import workflow

from agentkeel.schemas.outputs import resolve_refs
from agentkeel.schemas.plan.validation import dependencies
from agentkeel.schemas.result import StepOutcome, StepStatus
from agentkeel.workflows.dag.dispatch import run_plan
from agentkeel.workflows.dag.plan_patch import REPLAN_PATCH_PATCH, patched_plan
from agentkeel.workflows.nodes.ahead import (
    deadline_of,
    end_speculation,
    fit_to_deadline,
    passed_over,
    prune_speculation,
    refused,
)
from agentkeel.workflows.outputs import carry_by_reference, load_referenced
from agentkeel.workflows.release import since
from agentkeel.workflows.state import AgentState
from agentkeel.workflows.visibility import add_timing, stage


async def execute(state: AgentState) -> dict[str, Any]:
    started = workflow.now()
    attempt = state.get("replans", 0)
    stage(state, f"running {len(state['plan'].steps)} steps (round {attempt})")
    progress = state["progress"]
    progress.replans = attempt
    planner_error = state.get("planner_error")
    if planner_error is not None:
        # The planner had no usable plan this round: nothing runs, join sees why.
        return {
            "steps": state.get("steps", []),
            "plan_error": planner_error,
            **await end_speculation(state, []),
        }
    earlier = [s for s in state.get("steps", []) if s.attempt < attempt]
    resume = await _resumed(state, attempt)
    previous = state.get("previous_plan")
    if not resume and attempt > 0 and previous is not None and _patches(state):
        # The planner wrote what changes: the round before supplies the rest.
        last = [s for s in earlier if s.attempt == attempt - 1]
        state["plan"], carried = patched_plan(previous, last, state["plan"], attempt)
        read = [s for s in carried if s.id in _still_read(state, carried)]
        resume = resolve_refs(carried, await load_referenced(read))  # large outputs back
    plan, left_out = state["plan"], set[str]()
    deadline = None if resume else await deadline_of(state)
    if deadline is not None and not refused(state):
        plan, left_out = fit_to_deadline(state, plan)
    outcomes: list[StepOutcome] = []
    plan_error = None
    if not refused(state):
        prune_speculation(state, plan)
        outcomes, plan_error = await run_plan(
            plan,
            state["context"],
            attempt=attempt,
            # The scheduler updates these outcome objects in place: the query sees them live.
            on_start=lambda live: setattr(progress, "steps", [*earlier, *live]),
            resume=resume,
        )
    if left_out and plan_error is None:
        why = (deadline.refused if deadline and deadline.refused else None) or (
            f"left out to answer within the deadline of {state['request'].options.deadline_ms} ms"
        )
        outcomes = passed_over(state["plan"], outcomes, left_out, attempt, why)
    await carry_by_reference(outcomes, state["request"].tenant)
    update: dict[str, Any] = {
        "plan": state["plan"],
        "steps": [*earlier, *outcomes],
        "plan_error": plan_error,
        "timings": add_timing(state, "tools", started),
        "resume": False,
    }
    state["timings"] = update["timings"]
    update.update(await end_speculation(state, outcomes))
    if left_out:
        update["degraded"] = True  # a partial answer is not kept for the next asker
    if any(o.status is StepStatus.RUNNING for o in outcomes):
        # Watches stopped for a continue-as-new: the workflow hands the run on.
        update["suspended"] = True
    return update


def _patches(state: AgentState) -> bool:
    """Whether this replan's plan is a patch of the round before it: the planner was asked
    for one (`options.replan_patch`) and wrote one (a stand-in's whole plan is not)."""
    return bool(state.get("patching")) and since(REPLAN_PATCH_PATCH)


def _still_read(state: AgentState, carried: list[StepOutcome]) -> set[str]:
    """Steps whose outputs the rest of the plan still reads: those the unfinished steps
    depend on. Only these come back from Postgres (into history); the rest stay references."""
    finished = {s.id for s in carried if s.status not in (StepStatus.PENDING, StepStatus.RUNNING)}
    needed: set[str] = set()
    for step in state["plan"].steps:
        if step.id not in finished:
            needed.update(dependencies(step))
    return needed


async def _resumed(state: AgentState, attempt: int) -> list[StepOutcome]:
    """This round's outcomes from the run this one continues, outputs put back in place."""
    if not state.get("resume"):
        return []
    carried = [s for s in state.get("steps", []) if s.attempt == attempt]
    loaded = await load_referenced([s for s in carried if s.id in _still_read(state, carried)])
    return resolve_refs(carried, loaded)
