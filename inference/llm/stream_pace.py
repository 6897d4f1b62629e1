"""Whether the next plan is worth streaming: only where its tokens take long enough to come.

A streamed plan hands each complete read to the activity's sink, which signals the run
after a short hold (`EARLY_HOLD_S`); a plan whose every token arrived within that hold
sends nothing (the plan brings its reads). So for a planner that decodes a whole plan
at once (a small model on a fast GPU, or the benchmarks' instant model), streaming starts
no read early and only costs CPU: one HTTP chunk, one event and one delta per token. With
an instant model it was 5-11 ms of the inference worker's CPU per plan, against a
plan read whole (`docs/latency.md`, "a fifth pass").

`StreamPace` keeps, per engine and tier, what the last plans said:

- a streamed plan whose text came within the hold (first text to last) says *fast*: the
  next plans are read whole;
- a plan read whole whose answer took the hold or longer past the last stream's time to
  its first text (the two measures compared alike: a planner slow to start but quick to
  write stays fast) says *slow* again: the next plan streams, and measures afresh;
- while fast, the plan after `RECHECK_PLANS` read whole, or the first `RECHECK_S` after
  the last stream, streams anyway, so a planner that has slowed (a loaded server) is
  streamed again soon. A worker that plans less often than that streams every plan.

The first plan of an engine streams: nothing is known of its pace yet. Plans of one
planner share a pace whatever their length; a planner fast enough (about ten thousand
tokens a second) that a short plan fits the hold and a long one does not may read a long
one whole. Only an early signal is lost then: the plan still brings every read.
"""

from __future__ import annotations

import time
import weakref
from dataclasses import dataclass, field
from typing import Any

EARLY_HOLD_S = 0.02
"""How long a written read waits before it is signalled (`activities.plan_signals`)."""
RECHECK_PLANS = 16
RECHECK_S = 30.0


@dataclass
class _Pace:
    fast: bool = False
    whole_since: int = 0
    streamed_at: float = field(default_factory=time.monotonic)
    first_text_s: float = 0.0
    """The last stream's time from its request to its first text."""


class StreamPace:
    """The pace of each (engine, tier)'s recent plans; an engine gone takes its pace along."""

    def __init__(
        self,
        *,
        hold_s: float = EARLY_HOLD_S,
        recheck_plans: int = RECHECK_PLANS,
        recheck_s: float = RECHECK_S,
    ) -> None:
        self.hold_s = hold_s
        self.recheck_plans = recheck_plans
        self.recheck_s = recheck_s
        self._paces: weakref.WeakKeyDictionary[Any, dict[str, _Pace]] = weakref.WeakKeyDictionary()

    def _pace(self, engine: Any, tier: str) -> _Pace:
        try:
            by_tier = self._paces.setdefault(engine, {})
        except TypeError:  # an engine no weak reference can name: its own pace each time
            return _Pace()
        return by_tier.setdefault(tier, _Pace())

    def streams(self, engine: Any, tier: str) -> bool:
        """Whether the next plan of `engine` at `tier` should stream."""
        pace = self._pace(engine, tier)
        if not pace.fast:
            return True
        due = pace.whole_since >= self.recheck_plans
        return due or time.monotonic() - pace.streamed_at >= self.recheck_s

    def streamed(self, engine: Any, tier: str, *, first_text_s: float, text_span_s: float) -> None:
        """A streamed plan's first text came `first_text_s` after its request, and its text
        over `text_span_s` (its first piece to its last)."""
        pace = self._pace(engine, tier)
        pace.fast = text_span_s < self.hold_s
        pace.first_text_s = first_text_s
        pace.whole_since, pace.streamed_at = 0, time.monotonic()

    def whole(self, engine: Any, tier: str, took_s: float) -> None:
        """A plan read whole took `took_s`, its request to its answer."""
        pace = self._pace(engine, tier)
        if took_s - pace.first_text_s >= self.hold_s:
            pace.fast = False
        pace.whole_since += 1


PACE = StreamPace()
"""This process's: each inference worker learns its own planners' pace."""
