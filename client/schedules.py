"""Recurring questions as ordinary Temporal Schedules (`agentkeel schedule ...`).

A schedule starts `AgentWorkflow` with one fixed request, every interval or at the times of
a cron expression. Nothing here runs the recurrence: Temporal does, so the schedules keep
firing while no agentkeel client runs, and they are listed, paused, triggered and edited in
the Web UI (Schedules) and with `temporal schedule` like any other.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from pydantic import ValidationError
from temporalio.client import (
    Client,
    Schedule,
    ScheduleActionStartWorkflow,
    ScheduleAlreadyRunningError,
    ScheduleDescription,
    ScheduleOverlapPolicy,
    SchedulePolicy,
    ScheduleState,
)
from temporalio.common import Priority
from temporalio.service import RPCError, RPCStatusCode

from agentkeel.client.schedule_timing import ScheduleError, Timing, format_every
from agentkeel.schemas.actor import SYSTEM_ROLE, Actor
from agentkeel.schemas.errors import describe_validation
from agentkeel.schemas.lanes import Lane, run_priority
from agentkeel.schemas.names import AGENT_WORKFLOW
from agentkeel.schemas.request import AgentRequest, RunOptions
from agentkeel.sdk.serving import active_domain

WORKFLOW_ID_PREFIX = "sched-"
"""Runs are `sched-<schedule id>-<scheduled time>`: Temporal appends the time, so the runs
of one schedule sort together and never collide."""
MAX_ID_CHARS = 64

_SCHEDULE_ID = re.compile(rf"[A-Za-z0-9][A-Za-z0-9._-]{{0,{MAX_ID_CHARS - 1}}}")
_SLUG_CHARS = 40


def scheduled_request(
    question: str, *, tenant: str, actor: Actor, effects: bool = False
) -> AgentRequest:
    """The request every run of the schedule gets, validated now: a schedule whose input
    the workflow refuses would fail every run, one per interval, until someone noticed.

    `effects`: its runs may make side effects (a scheduled run is read-only otherwise);
    only an actor of a role that may approve, or `system`, may allow it."""
    if effects:
        role = active_domain().role(actor.role)
        if actor.role != SYSTEM_ROLE and (role is None or not role.may_approve):
            raise ScheduleError(
                f"{actor.describe()} may not let a schedule make side effects "
                "(only a role that may approve, or system)"
            )
    try:
        options = RunOptions(scheduled_effects=True) if effects else RunOptions()
        return AgentRequest(question=question, tenant=tenant, actor=actor, options=options)
    except ValidationError as exc:
        raise ScheduleError(f"invalid request: {describe_validation(exc)}") from None


def check_schedule_id(schedule_id: str) -> str:
    if _SCHEDULE_ID.fullmatch(schedule_id) is None:
        raise ScheduleError(
            f"a schedule id is 1-{MAX_ID_CHARS} letters, digits, '.', '_' or '-', starting "
            f"with a letter or digit; got {schedule_id!r}"
        )
    return schedule_id


def derived_schedule_id(request: AgentRequest) -> str:
    """A readable id that is the same each time for the same request: a slug of the question
    and a short hash of question, tenant and actor (so the same question for two tenants is
    two schedules, and adding it twice for one is refused rather than doubled)."""
    slug = re.sub(r"[^a-z0-9]+", "-", request.question.lower()).strip("-")
    slug = slug[:_SLUG_CHARS].rstrip("-") or "question"
    identity = "\x1f".join(
        (request.question.strip(), request.tenant, request.actor.model_dump_json())
    )
    return f"{slug}-{hashlib.sha256(identity.encode()).hexdigest()[:8]}"


def agent_schedule(
    schedule_id: str,
    request: AgentRequest,
    timing: Timing,
    *,
    task_queue: str,
    paused: bool,
    lanes: bool = True,
) -> Schedule:
    return Schedule(
        action=ScheduleActionStartWorkflow(
            AGENT_WORKFLOW,
            # One input, plain JSON: what `AgentWorkflow` validates (see `parse_request`).
            request.model_dump(mode="json"),
            id=WORKFLOW_ID_PREFIX + schedule_id,
            task_queue=task_queue,
            # Nobody waits on a scheduled question this second: behind interactive runs,
            # ahead of the cache warmer, and its tenant's share of the queue.
            priority=run_priority(Lane.AUTOMATION, request.tenant) if lanes else Priority.default,
        ),
        spec=timing.spec(),
        # Skip, not buffer: a recurring question must not pile up runs while one is still
        # going (a slow tool, a run waiting a day for an approval); the next due time after
        # it ends asks again, with fresher data than a queued run would have had.
        policy=SchedulePolicy(overlap=ScheduleOverlapPolicy.SKIP),
        state=ScheduleState(paused=True, note="created paused") if paused else ScheduleState(),
    )


def _memo(request: AgentRequest, timing: Timing) -> dict[str, Any]:
    """What `list` shows. Kept on the schedule because Temporal turns a cron expression
    into calendar specs, and the action's input is an opaque payload in a listing."""
    memo: dict[str, Any] = {
        "question": request.question,
        "tenant": request.tenant,
        "actor": request.actor.model_dump(mode="json"),
    }
    if timing.every is not None:
        memo["every"] = format_every(timing.every)
    else:
        memo["cron"] = timing.cron
    return memo


async def create_schedule(
    client: Client,
    request: AgentRequest,
    timing: Timing,
    *,
    task_queue: str,
    schedule_id: str | None = None,
    paused: bool = False,
    lanes: bool = True,
) -> str:
    """Create the schedule; its id. Nothing is created when anything is refused. `lanes`:
    its runs start in the automation lane (`schemas.lanes`), else at the default priority."""
    sid = check_schedule_id(schedule_id) if schedule_id else derived_schedule_id(request)
    schedule = agent_schedule(
        sid, request, timing, task_queue=task_queue, paused=paused, lanes=lanes
    )
    try:
        await client.create_schedule(sid, schedule, memo=_memo(request, timing))
    except ScheduleAlreadyRunningError:
        raise ScheduleError(
            f"schedule {sid!r} already exists (delete it first, or give another --id)"
        ) from None
    except RPCError as exc:
        if exc.status == RPCStatusCode.INVALID_ARGUMENT and timing.cron is not None:
            reason = exc.message.removeprefix("Invalid schedule spec: ")
            raise ScheduleError(f"--cron {timing.cron!r} is not valid: {reason}") from None
        raise
    return sid


@dataclass(frozen=True)
class ScheduledQuestion:
    """One schedule of `AgentWorkflow`, as `list` shows it."""

    id: str
    paused: bool
    note: str | None
    every: str | None
    cron: str | None
    next_run: datetime | None
    """None while paused: Temporal still computes due times then, but starts nothing."""
    question: str
    tenant: str
    actor: Actor | None

    @property
    def when(self) -> str:
        return f"every {self.every}" if self.every else f"cron {self.cron}"

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "paused": self.paused,
            "note": self.note,
            "every": self.every,
            "cron": self.cron,
            "next_run": self.next_run.isoformat() if self.next_run else None,
            "question": self.question,
            "tenant": self.tenant,
            "actor": self.actor.model_dump(mode="json") if self.actor else None,
        }


async def list_schedules(client: Client) -> list[ScheduledQuestion]:
    """Every schedule that starts `AgentWorkflow`, by id (the cache warmer's is not one).

    The listing only says which schedules exist (it is eventually consistent); each is then
    described, so a pause made a moment ago shows.
    """
    found = []
    async for entry in await client.list_schedules():
        try:
            description = await client.get_schedule_handle(entry.id).describe()
        except RPCError as exc:
            if exc.status == RPCStatusCode.NOT_FOUND:
                continue  # deleted since the listing
            raise
        action = description.schedule.action
        if isinstance(action, ScheduleActionStartWorkflow) and action.workflow == AGENT_WORKFLOW:
            found.append(await _scheduled_question(description))
    return sorted(found, key=lambda s: s.id)


async def _scheduled_question(description: ScheduleDescription) -> ScheduledQuestion:
    memo = await description.memo()
    schedule = description.schedule
    every = str(memo["every"]) if "every" in memo else None
    cron = str(memo["cron"]) if "cron" in memo else None
    if every is None and cron is None and schedule.spec.intervals:  # made elsewhere (Web UI)
        every = format_every(schedule.spec.intervals[0].every)
    paused = schedule.state.paused
    upcoming = description.info.next_action_times
    try:
        actor = Actor.model_validate(memo["actor"]) if "actor" in memo else None
    except ValidationError:
        actor = None
    return ScheduledQuestion(
        id=description.id,
        paused=paused,
        note=schedule.state.note,
        every=every,
        cron=cron,
        next_run=upcoming[0] if upcoming and not paused else None,
        question=str(memo.get("question", "")),
        tenant=str(memo.get("tenant", "")),
        actor=actor,
    )


def format_schedules(schedules: list[ScheduledQuestion]) -> str:
    """A table for the terminal, the question last (it is the long one)."""
    if not schedules:
        return "no scheduled questions (add one with `agentkeel schedule add`)"
    rows = [("ID", "STATE", "WHEN", "NEXT RUN (UTC)", "TENANT", "ACTOR", "QUESTION")]
    for s in schedules:
        rows.append(
            (
                s.id,
                "paused" if s.paused else "active",
                s.when,
                s.next_run.strftime("%Y-%m-%d %H:%M:%S") if s.next_run else "-",
                s.tenant or "?",
                s.actor.describe() if s.actor else "?",
                " ".join(s.question.split()) or "?",  # one line, whatever it holds
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    return "\n".join(
        "  ".join([*(cell.ljust(w) for cell, w in zip(row[:-1], widths, strict=True)), row[-1]])
        for row in rows
    )


async def pause_schedule(client: Client, schedule_id: str, note: str | None = None) -> None:
    """No run starts until `unpause`; a run already going finishes."""
    with _known(schedule_id):
        await client.get_schedule_handle(schedule_id).pause(note=note or "paused with agentkeel")


async def unpause_schedule(client: Client, schedule_id: str) -> None:
    with _known(schedule_id):
        await client.get_schedule_handle(schedule_id).unpause(note="unpaused with agentkeel")


async def delete_schedule(client: Client, schedule_id: str) -> None:
    """Runs the schedule started are left to finish."""
    with _known(schedule_id):
        await client.get_schedule_handle(schedule_id).delete()


@contextmanager
def _known(schedule_id: str) -> Iterator[None]:
    """Temporal's "workflow not found for ID: temporal-sys-scheduler:X" as the user's words."""
    try:
        yield
    except RPCError as exc:
        if exc.status == RPCStatusCode.NOT_FOUND:
            raise ScheduleError(f"no schedule {schedule_id!r}") from None
        raise
