"""The `execute` node: the round's plan through the DAG scheduler, inline in the workflow."""

from __future__ import annotations

from typing import Any

from temporalio import workflow

from workflows.dag.dispatch import run_plan
from workflows.state import AgentState
from workflows.visibility import add_timing, stage


async def execute(state: AgentState) -> dict[str, Any]:
    started = workflow.now()
    attempt = state.get("replans", 0)
    stage(state, f"running {len(state['plan'].steps)} steps (round {attempt})")
    progress = state["progress"]
    progress.replans = attempt
    planner_error = state.get("planner_error")
    if planner_error is not None:
        # The planner had no usable plan this round: nothing runs, join sees why.
        return {"steps": state.get("steps", []), "plan_error": planner_error}
    outcomes, plan_error = await run_plan(
        state["plan"],
        state["context"],
        attempt=attempt,
        # The scheduler updates these outcome objects in place: the query sees them live.
        on_start=lambda live: setattr(progress, "steps", [*state.get("steps", []), *live]),
    )
    return {
        "steps": [*state.get("steps", []), *outcomes],
        "plan_error": plan_error,
        "timings": add_timing(state, "tools", started),
    }
