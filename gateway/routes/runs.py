"""The routes of runs: start one (or answer from the cache), read it, follow its events,
cancel it. Each checks that the caller may see the run before it says anything of it."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import nullcontext
from typing import Annotated

from fastapi import APIRouter, Header, Query, Response
from sse_starlette import EventSourceResponse, ServerSentEvent
from temporalio.client import WorkflowExecutionStatus

from agentkeel.gateway.events import run_events
from agentkeel.gateway.keys import Refused
from agentkeel.gateway.routes.dependencies import PROBLEMS, CallerDep, GatewayDep
from agentkeel.gateway.stream_slot import following
from agentkeel.schemas.gateway import RunState, RunView
from agentkeel.schemas.request import AgentRequest

__all__ = ["DEFAULT_WAIT_S", "router"]

DEFAULT_WAIT_S = 120.0
"""How long `?wait=true` waits without a `timeout_s` (at most the gateway's longest)."""

router = APIRouter()


@router.post(
    "/v1/runs",
    response_model=RunView,
    status_code=202,
    responses={200: {"model": RunView, "description": "answered"}, **PROBLEMS},
)
async def start_run(
    request: AgentRequest,
    who: CallerDep,
    response: Response,
    gw: GatewayDep,
    wait: Annotated[bool, Query(description="answer with the result")] = False,
    coalesce: Annotated[bool, Query(description="share a run with equal requests")] = True,
    timeout_s: Annotated[float | None, Query(gt=0)] = None,
) -> RunView:
    """Start a run (`202`, with its ids), or with `wait=true` answer with its result
    (`200`; `202` if it is not done within `timeout_s`, at most
    `AGENTKEEL_GATEWAY_MAX_WAIT_S`). An answer in the cache's exact tier comes at once
    (`200`, `state: answered`), without a run. Past a quota of runs in flight (or, with
    `wait=true`, of streams: waiting is following), `429`."""
    client, runs, quotas, max_wait_s = gw.client, gw.runs, gw.quotas, gw.max_wait_s
    if timeout_s is not None and timeout_s > max_wait_s:
        raise Refused(400, f"timeout_s: a request waits at most {max_wait_s:g} seconds")
    waited_s = timeout_s if timeout_s is not None else min(DEFAULT_WAIT_S, max_wait_s)
    admitted = who.admit(request)
    cached = await client.cached_answer(admitted)
    if cached is not None:
        response.status_code = 200
        answered = await client.resolve_outputs(cached)
        return RunView(workflow_id="", run_id="", state=RunState.ANSWERED, result=answered)
    # Waiting on the run is following it: a stream slot while it waits, as for its events.
    held = following(quotas, who.quota_id, admitted.tenant) if wait else nullcontext()
    async with held:
        lease = await gw.reserve(who, admitted)
        try:
            lane = lease.lane if lease is not None else None
            handle = await client.start(admitted, coalesce=coalesce, lane=lane)
        except BaseException:
            await gw.release(lease)
            raise
        if quotas is not None and lease is not None:
            lease = await quotas.started(lease, handle.id)
        run_id = handle.result_run_id or ""
        if not wait:
            return RunView(workflow_id=handle.id, run_id=run_id, state=RunState.RUNNING)
        try:
            async with asyncio.timeout(waited_s):
                result, _ = await runs.outcome(handle)
            await gw.release(lease)  # ended: the slot is free now, not at the next sweep
        except TimeoutError:
            progress = await runs.progress(handle.id)
            return RunView(
                workflow_id=handle.id, run_id=run_id, state=RunState.RUNNING, progress=progress
            )
        response.status_code = 200
        if result is not None:
            return RunView(
                workflow_id=handle.id, run_id=run_id, state=RunState.COMPLETED, result=result
            )
        return await runs.view(handle.id, await runs.checked(who, handle.id))


@router.get("/v1/runs/{workflow_id}", response_model=RunView, responses=PROBLEMS)
async def get_run(workflow_id: str, who: CallerDep, gw: GatewayDep) -> RunView:
    """The run's state; its progress while running; its result once completed."""
    return await gw.runs.view(workflow_id, await gw.runs.checked(who, workflow_id))


@router.get(
    "/v1/runs/{workflow_id}/events",
    response_class=EventSourceResponse,
    responses={
        200: {
            "description": "`event:` `progress`, `token`, `reset`, then `result` or `error`; "
            "`data:` JSON (see `RunEventType`)",
            "content": {"text/event-stream": {"schema": {"type": "string"}}},
        },
        **PROBLEMS,
    },
)
async def stream_run_events(
    workflow_id: str,
    who: CallerDep,
    gw: GatewayDep,
    last_event_id: Annotated[str | None, Header()] = None,
) -> EventSourceResponse:
    """Server-Sent Events: `progress`, `token`, `reset`, then `result` or `error`.
    Resumable: send back the last event's id as `Last-Event-ID`."""
    runs, quotas = gw.runs, gw.quotas
    await runs.checked(who, workflow_id)
    slot = None  # taken here, so a full quota is a 429 rather than a broken stream
    if quotas is not None:
        tenant = who.key.tenant if who.key else (await runs.owner(workflow_id))[0]
        slot = await quotas.open_stream(who.quota_id, tenant)

    async def events() -> AsyncIterator[ServerSentEvent]:
        if slot is not None:
            slot.begin()
        try:
            stream = run_events(runs, gw.client.redis, workflow_id, last_event_id, gw.pollers)
            async for event in stream:
                yield ServerSentEvent(data=event.data, event=event.type.value, id=event.id)
        finally:
            if slot is not None:
                await slot.close()

    return EventSourceResponse(events(), ping=15, headers={"X-Accel-Buffering": "no"})


@router.post(
    "/v1/runs/{workflow_id}/cancel", status_code=202, response_model=RunView,
    responses=PROBLEMS,
)  # fmt: skip
async def cancel_run(workflow_id: str, who: CallerDep, gw: GatewayDep) -> RunView:
    """Ask the run to cancel (it stops its tools and ends `canceled`); `409` if it has
    already ended."""
    described = await gw.runs.checked(who, workflow_id)
    status = described.status
    if status is not WorkflowExecutionStatus.RUNNING:
        ended = status.name.lower() if status else "unknown"
        raise Refused(409, f"run {workflow_id!r} has ended ({ended})", "run-ended")
    await gw.runs.handle(workflow_id).cancel()
    return await gw.runs.view(workflow_id, described)
