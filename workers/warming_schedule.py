"""The Temporal Schedule that runs the cache warmer: visible and pausable in the Web UI."""

from __future__ import annotations

from datetime import timedelta

import structlog
from temporalio.client import (
    Client,
    Schedule,
    ScheduleActionStartWorkflow,
    ScheduleAlreadyRunningError,
    ScheduleIntervalSpec,
    ScheduleOverlapPolicy,
    SchedulePolicy,
    ScheduleSpec,
    ScheduleUpdate,
    ScheduleUpdateInput,
)
from temporalio.common import Priority

from agentkeel.schemas.lanes import LANE_PRIORITY_KEYS, WARMER_FAIRNESS_KEY, Lane
from agentkeel.schemas.warming import WarmInput
from agentkeel.settings.model import Settings
from agentkeel.workflows.warmer import CacheWarmerWorkflow

log = structlog.get_logger(__name__)

SCHEDULE_ID = "agentkeel-cache-warmer"


def warmer_priority(settings: Settings) -> Priority:
    """The warmer's lane is the last: it renews answers while nobody waits, and its runs
    (child workflows) carry each question's tenant (`workflows.warmer`)."""
    if not settings.priority_lanes:
        return Priority.default
    return Priority(priority_key=LANE_PRIORITY_KEYS[Lane.WARMING], fairness_key=WARMER_FAIRNESS_KEY)


def warming_schedule(settings: Settings) -> Schedule:
    every = timedelta(seconds=settings.warm_every_s)
    return Schedule(
        action=ScheduleActionStartWorkflow(
            CacheWarmerWorkflow.run,
            WarmInput(top_n=settings.warm_top_n, renew_below_s=max(60, settings.warm_every_s * 2)),
            id=f"{SCHEDULE_ID}-run",
            task_queue=settings.task_queue,
            priority=warmer_priority(settings),
        ),
        spec=ScheduleSpec(intervals=[ScheduleIntervalSpec(every=every)]),
        # A slow warming round is never run twice at once; the next one simply waits.
        policy=SchedulePolicy(overlap=ScheduleOverlapPolicy.SKIP),
    )


async def ensure_warming_schedule(client: Client, settings: Settings) -> None:
    """Create the schedule, or bring its interval and input up to date; leave pauses alone."""
    if settings.warm_every_s <= 0:
        return
    wanted = warming_schedule(settings)
    try:
        await client.create_schedule(SCHEDULE_ID, wanted)
        log.info("warming_schedule_created", every_s=settings.warm_every_s)
    except ScheduleAlreadyRunningError:

        def update(current: ScheduleUpdateInput) -> ScheduleUpdate:
            # Keep the current state (an operator's pause stays a pause).
            wanted.state = current.description.schedule.state
            return ScheduleUpdate(schedule=wanted)

        await client.get_schedule_handle(SCHEDULE_ID).update(update)
