"""A plan activity's early reads, signalled to its own run as the planner writes them.

The policy hands each complete read of the plan it is decoding to the sink this module
sets (`inference.llm.plan_stream.STEP_SINK`); each becomes one `plan_step` signal to the run
that scheduled the activity, sent without holding up the decode. The run decides what to
start (`workflows.plan_stream`): the model's text is untrusted there as here. Signals are
at-least-once: a retried attempt sends its reads again and the run starts each call
once. Every signal is sent (or has failed) before the activity returns, so the run has
them before the plan itself.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import structlog
from temporalio import activity

from agentkeel.inference.llm.plan_stream import STEP_SINK
from agentkeel.schemas.names import PLAN_STEP_SIGNAL
from agentkeel.schemas.speculation import PredictedCall

log = structlog.get_logger(__name__)


class StepSignals:
    """Signals one run of the activity's own workflow; `drain` waits for them."""

    def __init__(self, workflow_id: str, run_id: str | None) -> None:
        self._handle = activity.client().get_workflow_handle(workflow_id, run_id=run_id)
        self._sending: list[asyncio.Task[None]] = []
        self.sent = 0

    async def send(self, call: PredictedCall) -> None:
        """Signal `call` (in the background: the decode goes on at once)."""
        self._sending.append(asyncio.create_task(self._signal(call)))

    async def _signal(self, call: PredictedCall) -> None:
        try:
            await self._handle.signal(PLAN_STEP_SIGNAL, call)
            self.sent += 1
        except Exception as exc:  # an early start is an optimisation: the plan still runs it
            log.warning("plan_step_signal_failed", tool=call.tool, error=repr(exc))

    async def drain(self) -> None:
        await asyncio.gather(*self._sending, return_exceptions=True)


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
