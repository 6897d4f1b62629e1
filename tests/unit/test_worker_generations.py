"""A changed MCP tool list is served by a next worker generation beside the serving one
(`workers.generations`): each generation reads its own catalog in everything it runs, the
next one serves before the one before drains, and one that cannot be built leaves the
serving one in place. Served here by stand-ins for the Temporal worker (the fleet test
`test_mcp_tools.py` runs the real one against a real MCP server)."""

from __future__ import annotations

import asyncio
import dataclasses
import json
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager

import pytest

from agentkeel.inference.llm.plan_schema import plan_json_schema
from agentkeel.schemas.tools import catalog
from agentkeel.schemas.tools.catalog import TOOLS, catalog_version, install_domain
from agentkeel.schemas.tools.spec import ToolSpec
from agentkeel.workers.generations import follow_catalog, serve_generations
from agentkeel.workers.readiness import Readiness


@dataclasses.dataclass(frozen=True)
class _Domain:
    name: str
    tools: Sequence[ToolSpec]

    def intent_tools(self) -> Mapping[str, Sequence[str]]:
        return {}


_BASE = TOOLS["get_order"]


def _domain(*names: str) -> _Domain:
    return _Domain("generations", tuple(dataclasses.replace(_BASE, name=n) for n in names))


@pytest.fixture(autouse=True)
def _process_catalog_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    """A generation's install makes its catalog the process's newest: put it back."""
    monkeypatch.setattr(catalog, "_current", catalog._current)


class _Lists:
    """An MCP server's successive tool lists, and what each generation did and saw."""

    def __init__(
        self, *lists: tuple[str, ...], failing: int | None = None, undrained: int | None = None
    ) -> None:
        self.lists = list(lists)
        self.failing = failing
        self.undrained = undrained
        self.events: list[str] = []
        self.changes: list[Callable[[str], None]] = []
        self.seen: dict[int, set[str]] = {}
        self.tasks: list[asyncio.Task[None]] = []

    @asynccontextmanager
    async def serve(self, on_change: Callable[[str], None]) -> AsyncIterator[None]:
        number = len(self.changes)
        self.changes.append(on_change)
        if number == self.failing:
            self.events.append(f"{number} failed")
            raise RuntimeError("the server went away again")
        install_domain(_domain(*self.lists[min(number, len(self.lists) - 1)]))
        # What the generation runs later (its activities, its activations) reads its own.
        self.tasks.append(asyncio.create_task(self._read(number)))
        self.events.append(f"{number} serving")
        try:
            yield
        finally:
            self.events.append(f"{number} drained")
        if number == self.undrained:
            raise RuntimeError("a server's connection failed to close")

    async def _read(self, number: int) -> None:
        while True:
            self.seen.setdefault(number, set()).add(",".join(sorted(TOOLS)))
            await asyncio.sleep(0.005)


async def _served(lists: _Lists) -> tuple[asyncio.Event, Readiness, asyncio.Task[None]]:
    """`serve_generations` of `lists`, its first generation serving: its stop, its
    readiness, its task."""
    stop, readiness = asyncio.Event(), Readiness()
    serving = asyncio.create_task(serve_generations(lists.serve, readiness, stop))
    await _until(lambda: readiness.ready and lists.events == ["0 serving"])
    return stop, readiness, serving


async def _stopped(lists: _Lists, stop: asyncio.Event, serving: asyncio.Task[None]) -> None:
    stop.set()
    await serving
    for task in lists.tasks:
        task.cancel()


async def _until(condition: Callable[[], bool]) -> None:
    for _ in range(400):
        if condition():
            return
        await asyncio.sleep(0.005)
    raise AssertionError("never happened")


async def test_a_changed_list_is_served_beside_the_old_one_each_reading_its_own() -> None:
    lists = _Lists(("tb_lookup",), ("tb_lookup", "tb_grown"))
    stop, readiness, serving = await _served(lists)
    first = catalog_version()
    lists.changes[0]("toolbox")
    await _until(lambda: "0 drained" in lists.events)
    # The next generation served before the one before drained: no moment without a worker.
    assert lists.events == ["0 serving", "1 serving", "0 drained"]
    assert readiness.ready
    await asyncio.sleep(0.02)
    await _stopped(lists, stop, serving)
    assert lists.events[-1] == "1 drained" and not readiness.ready
    assert lists.seen[0] == {"tb_lookup,wait"}, "the old generation read only its own catalog"
    assert lists.seen[1] == {"tb_grown,tb_lookup,wait"}
    assert catalog_version() != first, "outside any generation: the newest"


async def test_a_next_generation_that_cannot_be_built_leaves_the_serving_one() -> None:
    lists = _Lists(("tb_lookup",), ("tb_lookup", "tb_grown"), failing=1)
    stop, readiness, serving = await _served(lists)
    lists.changes[0]("toolbox")
    await _until(lambda: "1 failed" in lists.events)
    await asyncio.sleep(0.02)
    assert lists.events == ["0 serving", "1 failed"] and readiness.ready
    lists.changes[0]("toolbox")  # the next change tries again
    await _until(lambda: "0 drained" in lists.events)
    assert lists.events == ["0 serving", "1 failed", "2 serving", "0 drained"]
    await _stopped(lists, stop, serving)


async def test_the_inference_worker_follows_a_changed_list_in_place() -> None:
    """Its activities replay nothing: outside any generation they read the newest catalog,
    installed before the one before is closed."""
    lists = _Lists(("tb_lookup",), ("tb_lookup", "tb_grown"))
    async with follow_catalog(lists.serve):
        assert set(TOOLS) == {"tb_lookup", "wait"}
        assert "tb_grown" not in json.dumps(plan_json_schema())
        lists.changes[0]("toolbox")
        await _until(lambda: "0 drained" in lists.events)
        assert lists.events == ["0 serving", "1 serving", "0 drained"]
        assert set(TOOLS) == {"tb_lookup", "tb_grown", "wait"}
        assert "tb_grown" in json.dumps(plan_json_schema()), "the planner is offered it"
    assert lists.events[-1] == "1 drained"
    for task in lists.tasks:
        task.cancel()


async def test_a_generation_whose_drain_fails_leaves_its_successor_serving() -> None:
    lists = _Lists(("tb_lookup",), ("tb_lookup", "tb_grown"), undrained=0)
    stop, readiness, serving = await _served(lists)
    lists.changes[0]("toolbox")
    await _until(lambda: "0 drained" in lists.events)
    await asyncio.sleep(0.02)
    assert not serving.done() and readiness.ready, "the successor serves on"
    stop.set()
    await serving
    assert lists.events == ["0 serving", "1 serving", "0 drained", "1 drained"]
    for task in lists.tasks:
        task.cancel()
