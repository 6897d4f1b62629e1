"""What the fleet tests share: the workers' environment and who did each task of a run."""

from __future__ import annotations

import uuid
from typing import Any

from temporalio.client import Client, WorkflowHandle

from agentkeel.cli.stack.local import child_env
from agentkeel.settings.model import Settings


def fleet_settings(
    client: Client, database_url: str, redis_url: str, queue: str, **overrides: Any
) -> Settings:
    """The settings of a fleet on the session's dev server: its own task queue (`queue`
    and a random suffix), no metrics port, no warming, and `overrides`."""
    return Settings(
        database_url=database_url,
        redis_url=redis_url,
        temporal_address=client.service_client.config.target_host,
        task_queue=f"{queue}-{uuid.uuid4().hex[:8]}",
        metrics_address="off",
        warm_every_s=0,
        **overrides,
    )


def fleet_env(settings: Settings, carrier_url: str) -> dict[str, str]:
    """The worker processes' environment: the settings, the test's carrier, and no
    `TEMPORAL_*` profile variables (the session's dev server, not a developer's profile)."""
    env = {k: v for k, v in child_env(settings).items() if not k.startswith("TEMPORAL_")}
    env["AGENTKEEL_SHOP_CARRIER_URL"] = carrier_url
    return env


async def identities(handle: WorkflowHandle[Any, Any], activity: str | None = None) -> list[str]:
    """Who took each workflow task and activity task of the run, in order; with `activity`,
    only who started that activity's tasks."""
    found = []
    scheduled: dict[int, str] = {}
    async for event in handle.fetch_history_events():
        if event.activity_task_scheduled_event_attributes.activity_type.name:
            attrs = event.activity_task_scheduled_event_attributes
            scheduled[event.event_id] = attrs.activity_type.name
        started = event.activity_task_started_event_attributes
        if activity is not None:
            if started.identity and scheduled.get(started.scheduled_event_id) == activity:
                found.append(started.identity)
            continue
        for attributes in (event.workflow_task_started_event_attributes, started):
            if attributes.identity:
                found.append(attributes.identity)
    return found
