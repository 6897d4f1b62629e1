"""The calls of a plan that are ready to start, most urgent first.

Urgency is the step's critical path (the longest expected time from its start to the end of
the run), then plan order, then the element's place in a `for_each`: the order is a pure
function of the plan, so a workflow that replays it starts the same calls in the same order.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterator

from agentkeel.workflows.dag.calls import ToolCall

_Entry = tuple[int, int, int, ToolCall]
"""(-critical path, plan order, element index, call): unique before the call is compared."""


class ReadyCalls:
    """A priority queue of calls whose step's dependencies have all ended."""

    def __init__(self) -> None:
        self._heap: list[_Entry] = []

    def __bool__(self) -> bool:
        return bool(self._heap)

    def add(self, call: ToolCall, *, critical_path_ms: int, order: int, seq: int) -> None:
        heapq.heappush(self._heap, (-critical_path_ms, order, seq, call))

    def startable(
        self, fits: Callable[[ToolCall], bool], full: Callable[[], bool]
    ) -> Iterator[ToolCall]:
        """Take out the calls that `fits` lets start, most urgent first, one at a time (the
        caller starts each before the next is looked at, so `fits` sees its slot taken).

        A call that does not fit stays queued, in its place; the search ends once `full`
        says no call could fit any more.
        """
        held: list[_Entry] = []
        try:
            while self._heap:
                entry = heapq.heappop(self._heap)
                if fits(entry[3]):
                    yield entry[3]
                else:
                    held.append(entry)
                    if full():
                        break
        finally:
            for entry in held:
                heapq.heappush(self._heap, entry)

    def drop(self, step_id: str) -> int:
        """Remove the queued calls of `step_id` (an element of it failed); how many."""
        kept = [entry for entry in self._heap if entry[3].step_id != step_id]
        dropped = len(self._heap) - len(kept)
        self._heap = kept
        heapq.heapify(self._heap)
        return dropped
