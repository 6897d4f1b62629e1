"""Ending the claims of runs that ended without settling them.

A run settles its side effects' claims itself, cancelled ones too (`effect_gate`). A run
terminated, or past its run timeout, stops without running another line: its open claims
would count toward their actor's and target's limits for the whole window, and the audit
would show no end. Each CPU worker looks every `EVERY_S` at the claims open longer than
`OLDER_THAN_S` and asks Temporal about their runs: where the run is closed, a claim whose
call never started ends `cancelled` (nothing moved; it no longer counts), one whose call
had started ends `unknown` (it may have moved; it keeps counting). Both say why. Settling
is idempotent (only an open claim changes), so every worker may sweep.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from typing import Any

import asyncpg
import structlog
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, WorkflowExecutionStatus, WorkflowHandle
from temporalio.service import RPCError

from agentkeel.activities.effects_ledger import EffectLedger
from agentkeel.schemas.effects import EffectStatus
from agentkeel.schemas.errors import RUN_ENDED
from agentkeel.settings.connections import connect_temporal
from agentkeel.settings.model import Settings

__all__ = ["sweep_claims", "sweeping_claims", "swept_ledger"]

log = structlog.get_logger(__name__)

Connect = Callable[[], Awaitable[Client]]

EVERY_S = 60.0
PAGE = 100
OLDER_THAN_S = 300.0
"""A live run settles its claim within its call's timeout or waits for an approval: only a
claim this old is looked at (and only its run's state decides)."""


async def sweep_claims(
    ledger: EffectLedger, client: Client, older_than_s: float = OLDER_THAN_S
) -> int:
    """End the open claims, older than `older_than_s`, of runs that are closed; how many.
    Every open claim is looked at, a page at a time (live runs' claims, waiting for an
    approval for days, never hide the others)."""
    ended, after_id = 0, 0
    while page := await ledger.open_claims(older_than_s, PAGE, after_id):
        for claim in page:
            ended += await _sweep_one(ledger, client, claim)
        after_id = page[-1]["effect_id"]
        if len(page) < PAGE:
            break
    return ended


async def _sweep_one(ledger: EffectLedger, client: Client, claim: Any) -> int:
    handle = client.get_workflow_handle(claim["workflow_id"], run_id=claim["run_id"])
    try:
        status = (await handle.describe()).status
        if status == WorkflowExecutionStatus.CONTINUED_AS_NEW:
            # The chain's later run may settle it (by its key): only once the chain ends.
            status = (await client.get_workflow_handle(handle.id).describe()).status
    except RPCError as exc:
        log.warning("claim_sweep_run_unknown", workflow_id=handle.id, error=str(exc))
        return 0
    if status in (None, WorkflowExecutionStatus.RUNNING):
        return 0
    how = status.name.lower()
    if await _call_started(handle, claim["tool"], claim["effect_key"]):
        outcome = EffectStatus.UNKNOWN
        reason = f"its run ended ({how}) after the call started: it may have moved"
    else:
        outcome = EffectStatus.CANCELLED
        reason = f"its run ended ({how}) before the call started: nothing moved"
    if not await ledger.end_claim(claim["effect_id"], outcome, RUN_ENDED, reason):
        return 0
    log.info("claim_ended", effect_id=claim["effect_id"], status=outcome.value, run=how)
    return 1


async def _call_started(handle: WorkflowHandle[Any, Any], tool: str, key: str | None) -> bool:
    """Whether the run scheduled `tool` with the effect's idempotency key (its effect call,
    not its authority check); a history it cannot tell from counts as started."""
    if key is None:
        return True
    async for event in handle.fetch_history_events():
        if event.event_type != EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
            continue
        attrs = event.activity_task_scheduled_event_attributes
        if attrs.activity_type.name != tool or not attrs.input.payloads:
            continue
        try:
            payload = json.loads(attrs.input.payloads[0].data)
        except ValueError:
            return True
        if not isinstance(payload, dict) or payload.get("idempotency_key") in (key, None):
            if not (isinstance(payload, dict) and payload.get("authorize_only")):
                return True
    return False


async def sweeping_claims(ledger: EffectLedger, connect: Connect, every_s: float = EVERY_S) -> None:
    """Sweep every `every_s` for as long as the worker runs (a failure waits a round)."""
    client: Client | None = None
    while True:
        await asyncio.sleep(every_s)
        try:
            client = client or await connect()
            await sweep_claims(ledger, client)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # Postgres or Temporal away: the next round tries again
            log.warning("claim_sweep_failed", error=str(exc))


STOP_WAIT_S = 2.0
"""The longest a worker's shutdown waits for a sweep in flight to end."""


def swept_ledger(pool: asyncpg.Pool, settings: Settings, stack: AsyncExitStack) -> EffectLedger:
    """The effects ledger of `pool`, swept (`sweeping_claims`, with a Temporal client of
    `settings`) until `stack` closes."""
    ledger = EffectLedger(pool)
    task = asyncio.create_task(sweeping_claims(ledger, lambda: connect_temporal(settings, [])))

    async def stop() -> None:
        task.cancel()
        # Bounded: a connect to an unreachable Temporal may finish its own retries before
        # it sees the cancel, and a worker's shutdown must not wait for that.
        _, pending = await asyncio.wait([task], timeout=STOP_WAIT_S)
        if pending:
            log.warning("claim_sweep_not_stopped", waited_s=STOP_WAIT_S)

    stack.push_async_callback(stop)
    return ledger
