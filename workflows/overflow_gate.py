"""An overflow run waits for one of the lane's slots before it does any work.

A run the gateway started in the overflow lane (its tenant was past its interactive share:
`schemas.lanes`) asks for a slot first thing (`activities.overflow_slots`); while none is
free it waits here, in its workflow, where the wait is durable and costs no worker
anything: a timer, and a signal from the run that hands it a slot as it ends. Every
other run passes without a command. A cap of 0, or a Redis that does not answer, lets
every overflow run go on at once (the lane still orders the backlog).

The wait shows in the Web UI (the run's current details) and as the `queued` stage of
`progress`.
"""

from __future__ import annotations

from datetime import timedelta
from typing import TypeVar

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import (
    ActivityError,
    ApplicationError,
    FailureError,
    is_cancelled_exception,
)

from agentkeel.schemas import names
from agentkeel.schemas.lanes import LANE_PRIORITY_KEYS, Lane, OverflowSlotAsk, OverflowSlotGrant
from agentkeel.schemas.progress import RunProgress

OVERFLOW_GATE_PATCH = "overflow-gate-v1"
"""Overflow runs started before it went on at once. Asked at the run's start, by overflow
runs only, before any activity (`workflows.release`)."""
FIRST_LOOK = timedelta(seconds=2)
LONGEST_WAIT = timedelta(seconds=30)
"""Between two looks of a waiting run: doubling from `FIRST_LOOK`. A slot handed over
wakes it at once; the looks find the slots whose leases expired, and stand in for a
wake-up that did not arrive."""
_ASK_RETRY = RetryPolicy(initial_interval=timedelta(milliseconds=200), maximum_attempts=3)
_WAKE_AT_MOST = 32
"""Waiters one run wakes in one go, those it hands a gone waiter's slot on to included (a
waiter terminated in the last `activities.overflow_slots.WAITER_STALE_S` can still be
handed one); past it, a live waiter handed a slot finds it at its next look."""
T = TypeVar("T")


class OverflowGate:
    def __init__(self, progress: RunProgress) -> None:
        self._progress = progress
        self._woken = False
        self._asked = False
        """Whether the run has a slot or a place in the queue to give back."""

    def wake(self) -> None:
        """A run handed this one a slot (or anyone signalled: it only looks again)."""
        self._woken = True

    async def enter(self, *, continued: bool) -> None:
        """Wait for a slot when this is an overflow run (a plain return otherwise). A run
        that continues an earlier one (continue-as-new) was let past the gate already."""
        if continued or workflow.info().priority.priority_key != LANE_PRIORITY_KEYS[Lane.OVERFLOW]:
            return
        if not workflow.patched(OVERFLOW_GATE_PATCH):
            return
        me = workflow.info().workflow_id
        wait, queued = FIRST_LOOK, False
        while True:
            self._woken = False  # (before asking: a wake-up sent meanwhile is kept)
            grant = await self._ask(names.TAKE_OVERFLOW_SLOT, me, OverflowSlotGrant)
            # Something to give back: a slot, a place in the queue, or an answer that never
            # came (the script may have run). No cap, or Redis away at once: nothing.
            self._asked = grant is None or grant.held or not grant.go_on or queued
            if grant is None:
                break
            await self._wake(grant.woken)
            if grant.go_on:
                break
            if not queued:
                queued = True
                self._queued(True)
            try:
                await workflow.wait_condition(lambda: self._woken, timeout=wait)
            except TimeoutError:
                wait = min(wait * 2, LONGEST_WAIT)
        if queued:
            self._queued(False)

    async def leave(self) -> None:
        """Give the slot (or the place in the queue) back, and wake the waiters a slot
        goes to. Runs on every way out of the run, a cancel while it waits included."""
        if not self._asked:
            return
        self._asked = False
        me = workflow.info().workflow_id
        try:
            await self._wake(await self._ask(names.GIVE_BACK_OVERFLOW_SLOT, me, list[str]) or [])
        except BaseException as exc:  # (eviction's own error is not a cancel: re-raised)
            if not is_cancelled_exception(exc):
                raise
            # A cancel that arrives now finds the run's outcome decided (its answer, or its
            # own cancel being recorded): the slot's lease expires on its own, and the next
            # waiter finds it at its next look.
            workflow.logger.info("overflow slot left to expire: the run was cancelled")

    async def _ask(self, activity: str, run: str, answer: type[T]) -> T | None:
        """The slot store's answer for `run`; None when it cannot be asked (go on)."""
        try:
            result: T = await workflow.execute_local_activity(
                activity,
                OverflowSlotAsk(workflow_id=run),
                result_type=answer,
                start_to_close_timeout=timedelta(seconds=5),
                retry_policy=_ASK_RETRY,
                summary="overflow slot",
            )
        except (ActivityError, ApplicationError) as failed:  # a local activity's comes bare
            if is_cancelled_exception(failed):
                raise
            workflow.logger.warning("overflow slot not asked, the run goes on: %s", failed)
            return None
        return result

    async def _wake(self, waiters: list[str]) -> None:
        """Signal each waiter handed a slot; one that ended meanwhile hands its slot on."""
        pending = list(waiters)
        for _ in range(_WAKE_AT_MOST):
            if not pending:
                return
            waiter = pending.pop(0)
            try:
                await workflow.get_external_workflow_handle(waiter).signal(
                    names.OVERFLOW_SLOT_SIGNAL
                )
            except FailureError as gone:
                if is_cancelled_exception(gone):
                    raise
                workflow.logger.info("overflow waiter %s is gone: %s", waiter, gone)
                pending += await self._ask(names.GIVE_BACK_OVERFLOW_SLOT, waiter, list[str]) or []

    def _queued(self, waiting: bool) -> None:
        self._progress.stage = "queued" if waiting else "starting"
        workflow.set_current_details(
            "Queued: waiting for a slot of the overflow lane (its tenant is past its "
            "interactive share of runs in flight)"
            if waiting
            else ""
        )
