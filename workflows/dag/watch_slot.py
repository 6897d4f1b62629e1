"""A watch asked for in words takes its watch slot before it first waits.

The gateway counts a watch asked for up front when the run starts; one asked for in words
("tell me when it ships") is a watch only once its plan has a repeated step, so the run
takes the slot itself (`activities.watch_slots`), under the limits the gateway published
for the key and tenant that started it. Over a limit, the watch step fails with
`WatchQuotaFull` before it waits, and the run answers with what it found so far.
"""

from __future__ import annotations

from datetime import timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError, is_cancelled_exception

from agentkeel.schemas import names
from agentkeel.schemas.errors import WATCH_QUOTA_FULL
from agentkeel.schemas.lanes import WatchSlotHold, asks_watch
from agentkeel.schemas.result import StepError
from agentkeel.workflows.dag.run_context import RunContext
from agentkeel.workflows.release import since

WATCH_QUOTA_PATCH = "watch-quota-v1"
"""Runs started before it took no watch slot of their own (the gateway's sweep counted a
watch asked for in words once it waited, past any limit)."""
_HOLD_RETRY = RetryPolicy(initial_interval=timedelta(milliseconds=200), maximum_attempts=3)
"""Redis away: the watch goes on uncounted rather than wait on the quota store."""


async def hold_watch_slot(ctx: RunContext) -> StepError | None:
    """None when the watch may wait (its slot held, no limit applies, or counted at its
    door already); `WatchQuotaFull` when its key's or tenant's watches are at the limit."""
    request = ctx.request
    if request.usage_key is None or asks_watch(request):
        return None  # no door counted it, or its door counted it as a watch
    if not since(WATCH_QUOTA_PATCH):
        return None
    hold = WatchSlotHold(
        usage_key=request.usage_key,
        tenant=request.tenant,
        workflow_id=workflow.info().workflow_id,
    )
    try:
        refused: str | None = await workflow.execute_local_activity(
            names.HOLD_WATCH_SLOT,
            hold,
            start_to_close_timeout=timedelta(seconds=5),
            retry_policy=_HOLD_RETRY,
            summary="hold a watch slot",
        )
    except (ActivityError, ApplicationError) as failed:  # a local activity's comes bare
        if is_cancelled_exception(failed):
            raise  # the run (or step) is being cancelled: not a quota matter
        workflow.logger.warning("watch slot not held, the watch goes on: %s", failed)
        return None
    if refused is None:
        return None
    return StepError(type=WATCH_QUOTA_FULL, message=refused, non_retryable=True)
