"""Lanes: which runs go first when a task queue has a backlog, and every tenant's share.

A run starts with a Temporal `Priority`: a priority key by its lane (interactive 1, a
tenant's runs past its interactive share 2, automations 3, the cache warmer 5; smaller
goes first) and its tenant as the fairness key, so one tenant flooding a queue delays its
own runs, not everyone's. Temporal hands a
workflow's priority on to its activities and child workflows unless they set their own,
so the lane and tenant a run starts with hold on every task queue it uses (the CPU
queue's workflow and tool tasks, the inference queue's model calls). Priority orders a
backlog only: with idle workers every task starts at once, whatever its lane.
"""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel
from temporalio.common import Priority

from agentkeel.schemas.request import AgentRequest

__all__ = [
    "LANE_PRIORITY_KEYS",
    "WARMER_FAIRNESS_KEY",
    "Lane",
    "OverflowSlotAsk",
    "OverflowSlotGrant",
    "WatchSlotHold",
    "asks_watch",
    "lane_of",
    "run_priority",
]


class Lane(StrEnum):
    """Who waits for a run, and so how soon it should start."""

    INTERACTIVE = "interactive"
    """A person or a service waits for the answer now."""
    OVERFLOW = "overflow"
    """An interactive run its tenant started past its share of runs in flight (the
    gateway's `AGENTKEEL_GATEWAY_INTERACTIVE_RUNS_PER_TENANT`): served after every
    tenant's interactive runs, so one tenant's burst waits behind the others' runs rather
    than taking a share of the worker beside them; ahead of automations."""
    AUTOMATION = "automation"
    """A watch or a scheduled question: nobody waits on this second."""
    WARMING = "warming"
    """The cache warmer re-running hot questions: only when nothing else waits."""


LANE_PRIORITY_KEYS: dict[Lane, int] = {
    Lane.INTERACTIVE: 1,
    Lane.OVERFLOW: 2,
    Lane.AUTOMATION: 3,  # Temporal's default: runs started without a priority share it
    Lane.WARMING: 5,  # the server's lowest by default (`matching.priorityLevels` 5)
}

WARMER_FAIRNESS_KEY = "agentkeel-cache-warmer"
"""The fairness key of the warmer's own workflow (its runs carry each question's tenant)."""


def asks_watch(request: AgentRequest) -> bool:
    """Whether the request asks for a watch (a run that may last days): by its options, or
    by a plan of its own with a repeated step. A watch asked for in words ("tell me when it
    ships") is known only once its run waits on it."""
    if request.options.watch_every_s is not None:
        return True
    return request.plan is not None and any(s.repeat is not None for s in request.plan.steps)


def lane_of(request: AgentRequest) -> Lane:
    """The lane of a request started by a caller: a watch is an automation, else interactive."""
    return Lane.AUTOMATION if asks_watch(request) else Lane.INTERACTIVE


def run_priority(lane: Lane, tenant: str) -> Priority:
    """The `Priority` a run of `tenant` in `lane` starts with (tenants are at most 64
    characters of `[A-Za-z0-9._:@-]`, within Temporal's 64-byte fairness key)."""
    return Priority(priority_key=LANE_PRIORITY_KEYS[lane], fairness_key=tenant)


class WatchSlotHold(BaseModel):
    """A run that starts watching without having asked for a watch up front (a watch asked
    for in words) takes a watch slot of its key and tenant (`activities.watch_slots`)."""

    usage_key: str
    tenant: str
    workflow_id: str


class OverflowSlotAsk(BaseModel):
    """An overflow run asks for a slot, or gives its slot back (`activities.overflow_slots`)."""

    workflow_id: str


class OverflowSlotGrant(BaseModel):
    """Whether an overflow run may go on now."""

    go_on: bool
    held: bool
    """Whether it holds a slot, to give back when it ends."""
    woken: list[str] = []
    """Waiters just handed a slot that freed up (a lease that expired), for the asking run
    to wake."""
