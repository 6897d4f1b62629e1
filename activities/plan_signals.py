"""A plan activity's early reads, signalled to its own run as the planner writes them.

The policy hands each complete read of the plan it is decoding to the sink this module
sets (`inference.llm.plan_stream.STEP_SINK`); they go as `plan_step` signals to the run
that scheduled the activity, without holding up the decode: each after a short hold
(`HOLD_S`), with the reads written meanwhile in the same signal. The run decides what to
start (`workflows.plan_stream`): the model's text is untrusted there as here. Signals are
at-least-once: a retried attempt sends its reads again and the run starts each call
once. A signal on its way when the plan is done is awaited before the activity returns, so
the run has it before the plan itself.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import structlog
from temporalio import activity

from agentkeel.inference.llm.plan_stream import STEP_SINK
from agentkeel.inference.llm.stream_pace import EARLY_HOLD_S
from agentkeel.schemas.names import PLAN_STEP_SIGNAL
from agentkeel.schemas.speculation import PlanSteps, PredictedCall

log = structlog.get_logger(__name__)


HOLD_S = EARLY_HOLD_S
"""How long a written read waits before it is signalled, with the reads written meanwhile
in the same signal. A plan that ends within it (a model that decodes at once) sends none:
the plan brings them, and the run's history has no signal event for them; such a
planner's next plans are read whole (`inference.llm.stream_pace`)."""


class StepSignals:
    """Signals one run of the activity's own workflow; `drain` ends the sending."""

    def __init__(self, workflow_id: str, run_id: str | None, *, hold_s: float = HOLD_S) -> None:
        self._handle = activity.client().get_workflow_handle(workflow_id, run_id=run_id)
        self._hold_s = hold_s
        self._pending: list[PredictedCall] = []
        self._holding = False
        self._sending: asyncio.Task[None] | None = None
        self.signals = 0

    async def send(self, call: PredictedCall) -> None:
        """Signal `call` soon (the decode goes on at once)."""
        self._pending.append(call)
        if self._sending is None or self._sending.done():
            self._holding = True
            self._sending = asyncio.create_task(self._signal_after_hold())

    async def _signal_after_hold(self) -> None:
        await asyncio.sleep(self._hold_s)
        self._holding = False
        calls, self._pending = self._pending, []
        try:
            await self._handle.signal(PLAN_STEP_SIGNAL, PlanSteps(calls=calls))
            self.signals += 1
        except Exception as exc:  # an early start is an optimisation: the plan still runs it
            log.warning("plan_step_signal_failed", calls=len(calls), error=repr(exc))
        if self._pending:  # written while this signal was on its way
            self._holding = True
            await self._signal_after_hold()

    async def drain(self) -> None:
        """The plan is decoded (or the attempt failed): reads still held are dropped (the
        plan brings them), a signal on its way is awaited, so it precedes the plan."""
        sending = self._sending
        if sending is None or sending.done():
            return
        if self._holding:
            sending.cancel()
        await asyncio.gather(sending, return_exceptions=True)


@asynccontextmanager
async def early_reads(wanted: bool) -> AsyncIterator[None]:
    """Within the block, plans decoded in this context signal their early reads to the
    activity's run (when `wanted`: the run asked and the worker streams plans). Not from a
    local activity (a policy on the CPU worker): its run is busy in the very workflow task
    that waits for it, and such a policy answers at once anyway."""
    info = activity.info()
    if not wanted or info.is_local or info.workflow_id is None:
        yield
        return
    signals = StepSignals(info.workflow_id, info.workflow_run_id)
    token = STEP_SINK.set(signals.send)
    try:
        yield
    finally:
        STEP_SINK.reset(token)
        await signals.drain()
