"""The `store` step's order: the run record and the path entry are written at once, and the
answer is announced only after both; a record that fails announces nothing.

Postgres, the path cache and Redis are stand-ins recording what was asked of them (this is
about the step's order, which the stack tests cannot see).
"""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

import asyncpg
import pytest

from agentkeel.activities import run_store
from agentkeel.activities.cache.backend import CacheUnavailable
from agentkeel.activities.run_store import StoreActivities
from agentkeel.schemas.plan.model import Plan
from agentkeel.schemas.result import AgentResult
from agentkeel.schemas.route import Route
from agentkeel.schemas.run_record import StoreInput

WAIT_S = 5.0
"""Bound on each wait, so a store that wrote one after the other fails instead of hanging."""


class Record:
    """A pool whose insert waits until the cache entry is being written."""

    def __init__(self, log: list[str], entry_started: asyncio.Event, fails: bool = False) -> None:
        self.log = log
        self.entry_started = entry_started
        self.fails = fails

    async def execute(self, *_: Any) -> str:
        self.log.append("record started")
        await asyncio.wait_for(self.entry_started.wait(), WAIT_S)
        if self.fails:
            raise asyncpg.PostgresConnectionError("connection lost")
        self.log.append("record written")
        return "INSERT 0 1"


class Entry:
    """A path cache whose entry waits until the record is under way."""

    def __init__(self, log: list[str], started: asyncio.Event, fails: bool = False) -> None:
        self.log = log
        self.started = started
        self.fails = fails
        self.cancelled = False

    async def store(self, *_: Any, **__: Any) -> timedelta:
        self.log.append("entry started")
        self.started.set()
        try:
            await asyncio.sleep(0.01)
        except asyncio.CancelledError:
            self.cancelled = True
            raise
        if self.fails:
            raise CacheUnavailable("redis down")
        self.log.append("entry written")
        return timedelta(seconds=300)


def _input(**fields: Any) -> StoreInput:
    result = AgentResult(
        answer="Order 1 ships today.",
        route=Route(intent="order_status", confidence=1.0),
        plan=Plan(),
        cache="miss",
        workflow_id="wf",
        run_id="run",
    )
    return StoreInput(tenant="t", question="where is order 1?", result=result, **fields)


def _store(log: list[str], *, record_fails: bool = False, entry_fails: bool = False) -> Any:
    started = asyncio.Event()
    entry = Entry(log, started, fails=entry_fails)
    pool = Record(log, started, fails=record_fails)
    return StoreActivities(pool, entry, redis=object()), entry  # type: ignore[arg-type]


@pytest.fixture
def announced(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    log: list[str] = []

    async def announce(_: Any, result: AgentResult, **__: Any) -> None:
        log.append(f"announced {result.run_id}")

    monkeypatch.setattr(run_store, "announce", announce)
    return log


async def test_record_and_entry_are_written_at_once_then_the_answer_announced(
    announced: list[str],
) -> None:
    activities, _ = _store(announced)
    stored = await activities.store(_input(announce=True))
    assert stored.recorded and stored.cached and stored.cache_ttl_s == 300
    # The record waited for the entry to start: written one after the other, it would not.
    assert announced.index("entry started") < announced.index("record written")
    assert announced[-1] == "announced run"
    assert {"record written", "entry written"} <= set(announced[:-1])


async def test_a_record_that_fails_announces_nothing_and_stops_the_entry(
    announced: list[str],
) -> None:
    activities, entry = _store(announced, record_fails=True)
    with pytest.raises(asyncpg.PostgresConnectionError):
        await activities.store(_input(announce=True))
    assert entry.cancelled
    assert not [line for line in announced if line.startswith("announced")]


async def test_a_cache_that_does_not_answer_still_records_and_announces(
    announced: list[str],
) -> None:
    activities, _ = _store(announced, entry_fails=True)
    stored = await activities.store(_input(announce=True))
    assert stored.recorded and not stored.cached and stored.cache_ttl_s is None
    assert announced[-1] == "announced run"


async def test_a_run_that_asks_no_cache_entry_writes_none(announced: list[str]) -> None:
    started = asyncio.Event()
    started.set()  # no entry will start: the record must not wait for one
    entry = Entry(announced, asyncio.Event())
    activities = StoreActivities(Record(announced, started), entry, redis=None)  # type: ignore[arg-type]
    stored = await activities.store(_input(use_cache=False, announce=True))
    assert stored.recorded and not stored.cached
    assert announced == ["record started", "record written"]  # nothing announced: no Redis
