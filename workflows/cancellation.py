"""What a cancelled run leaves behind: its token stream says so, for readers still waiting."""

from __future__ import annotations

from datetime import timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, is_cancelled_exception

from agentkeel.schemas import names
from agentkeel.schemas.tokens import CancellationNotice

ANNOUNCE_TIMEOUT = timedelta(seconds=2)


def ends_the_run(exc: ActivityError, authority: bool) -> bool:
    """A local activity that failed because its run was cancelled: the caller re-raises
    instead of carrying on as if the lookup or the record had merely failed. (Runs recorded
    before `authority-v1` carried on, and replay as they ran.)"""
    return authority and is_cancelled_exception(exc)


async def announce_cancellation(*, continued: bool = False) -> None:
    """Best effort: a reader that misses it learns the run's end from Temporal all the same.

    A run that continued another announces on the stream of the run the client started
    (where its answer would have gone)."""
    info = workflow.info()
    run_id = info.first_execution_run_id if continued else info.run_id
    try:
        await workflow.execute_local_activity(
            names.ANNOUNCE_CANCELLATION,
            CancellationNotice(workflow_id=info.workflow_id, run_id=run_id),
            start_to_close_timeout=ANNOUNCE_TIMEOUT,
            retry_policy=RetryPolicy(maximum_attempts=2),
        )
    except ActivityError as exc:
        workflow.logger.warning("cancellation not announced on the stream: %s", exc.cause)
