"""Reading what a run did from its Temporal history."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from temporalio.client import WorkflowHandle, WorkflowHistory

from agentkeel.schemas import names
from agentkeel.schemas.tools import TOOLS

AGENT_ACTIVITIES = frozenset({"lookup_cache", "route", "plan", "join", "respond", "store"})


def scheduled_activities(history: WorkflowHistory) -> list[str]:
    """Activity types scheduled on task queues, in order, with the policy steps the CPU
    worker served itself as local activities named as the steps (`local_route` is `route`)
    and the tools it ran as local activities; other local activities are excluded."""
    steps = {local: step for step, local in names.LOCAL_POLICY_STEPS.items()}
    scheduled = []
    for e in history.events:
        if e.HasField("activity_task_scheduled_event_attributes"):
            scheduled.append(e.activity_task_scheduled_event_attributes.activity_type.name)
        elif (
            e.HasField("marker_recorded_event_attributes")
            and e.marker_recorded_event_attributes.marker_name == LOCAL_ACTIVITY_MARKER
        ):
            data = e.marker_recorded_event_attributes.details["data"].payloads[0].data
            kind = json.loads(data)["activity_type"]
            if kind in steps:
                scheduled.append(steps[kind])
            elif kind in TOOLS:  # a fast read run as a local activity (`ToolSpec.local_read`)
                scheduled.append(kind)
    return scheduled


def tool_activities_scheduled(history: WorkflowHistory) -> list[str]:
    return [name for name in scheduled_activities(history) if name not in AGENT_ACTIVITIES]


LOCAL_ACTIVITY_MARKER = "core_local_activity"
"""Markers of local activities; a `workflow.patched()` records another kind (`core_patch`)."""


def local_activity_markers(history: WorkflowHistory) -> list[bytes]:
    return [
        e.SerializeToString()
        for e in history.events
        if e.HasField("marker_recorded_event_attributes")
        and e.marker_recorded_event_attributes.marker_name == LOCAL_ACTIVITY_MARKER
    ]


async def awaiting_approval(handle: WorkflowHandle[Any, Any]) -> dict[str, Any]:
    """The approval a run waits for (its `progress.awaiting`), once it waits; up to 30 s."""
    for _ in range(300):
        progress = await handle.query(names.PROGRESS_QUERY, result_type=dict)
        if progress.get("awaiting"):
            awaiting: dict[str, Any] = progress["awaiting"]
            return awaiting
        await asyncio.sleep(0.1)
    raise AssertionError("the run never waited for an approval")


def _marked(history: WorkflowHistory) -> list[str]:
    ids = []
    for event in history.events:
        if event.WhichOneof("attributes") != "marker_recorded_event_attributes":
            continue
        marker = event.marker_recorded_event_attributes
        if marker.marker_name == "core_patch":
            ids.append(json.loads(marker.details["patch-data"].payloads[0].data)["id"])
    return ids
