"""`agentkeel watches`: the runs that are waiting now, and on what.

Found through visibility (`AgentWaiting = true`, running), then each run's `progress`
query says what it waits for and until when: the same facts ops see in the Web UI.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from temporalio.client import Client
from temporalio.service import RPCError

from agentkeel.schemas.names import AGENT_WORKFLOW, PROGRESS_QUERY
from agentkeel.schemas.progress import RunProgress, Waiting
from agentkeel.schemas.search_attributes import AGENT_WAITING

WAITING_RUNS = (
    f'WorkflowType = "{AGENT_WORKFLOW}" AND {AGENT_WAITING.name} = true '
    'AND ExecutionStatus = "Running"'
)


@dataclass(frozen=True)
class WaitingRun:
    workflow_id: str
    run_id: str
    waiting: list[Waiting]
    continued: int

    def as_json(self) -> dict[str, Any]:
        return {
            "workflow_id": self.workflow_id,
            "run_id": self.run_id,
            "continued": self.continued,
            "waiting": [w.model_dump(mode="json") for w in self.waiting],
        }


async def waiting_runs(client: Client, *, limit: int = 100) -> list[WaitingRun]:
    """Runs waiting on a timer or a watch, newest first, each with what it waits for."""
    found = []
    async for execution in client.list_workflows(WAITING_RUNS, limit=limit):
        found.append((execution.id, execution.run_id))
    progress = await asyncio.gather(*(_progress(client, wid, rid) for wid, rid in found))
    return [
        WaitingRun(workflow_id=wid, run_id=rid, waiting=p.waiting, continued=p.continued)
        for (wid, rid), p in zip(found, progress, strict=True)
        if p is not None and p.waiting
    ]


async def _progress(client: Client, workflow_id: str, run_id: str) -> RunProgress | None:
    handle = client.get_workflow_handle(workflow_id, run_id=run_id)
    try:
        return await handle.query(PROGRESS_QUERY, result_type=RunProgress)
    except RPCError:  # it finished (or continued as new) since it was listed
        return None


def format_waiting(runs: list[WaitingRun]) -> str:
    if not runs:
        return "no run is waiting"
    lines = []
    for run in runs:
        continued = f" (continued {run.continued}x)" if run.continued else ""
        lines.append(f"{run.workflow_id}{continued}")
        for w in run.waiting:
            if w.until is None:
                lines.append(f"  {w.step_id}: waiting for {w.what}")
                continue
            deadline = f", gives up at {w.deadline:%Y-%m-%d %H:%M:%S}" if w.deadline else ""
            so_far = f", {w.runs} runs so far" if w.deadline else ""
            lines.append(
                f"  {w.step_id} {w.tool}: {w.what}; next at {w.until:%Y-%m-%d %H:%M:%S}"
                f"{so_far}{deadline}"
            )
    return "\n".join(lines)
