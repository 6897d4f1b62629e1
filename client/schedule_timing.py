"""When a schedule fires: `--every` intervals (`1h30m`) or `--cron` expressions."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import timedelta

from temporalio.client import ScheduleIntervalSpec, ScheduleSpec

MIN_EVERY = timedelta(seconds=1)
MAX_EVERY = timedelta(days=366)
"""A longer interval is almost surely a typo; `--cron` says "yearly" explicitly."""
_EVERY = re.compile(r"(?:(\d+)d)?(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?")
_UNITS = (("d", 86400), ("h", 3600), ("m", 60), ("s", 1))


class ScheduleError(ValueError):
    """A schedule command that cannot be carried out; the message says why, in one line."""


@dataclass(frozen=True)
class Timing:
    """When a schedule fires: every `every`, or at the times of the cron expression `cron`."""

    every: timedelta | None = None
    cron: str | None = None

    @classmethod
    def parse(cls, *, every: str | None = None, cron: str | None = None) -> Timing:
        """From `--every` or `--cron` (exactly one). The cron expression is checked by
        Temporal when the schedule is created, so its rules are the server's, not a copy."""
        if (every is None) == (cron is None):
            raise ScheduleError("give exactly one of --every and --cron")
        if every is not None:
            return cls(every=parse_every(every))
        expression = (cron or "").strip()
        if not expression:
            raise ScheduleError("--cron must not be empty")
        return cls(cron=expression)

    def spec(self) -> ScheduleSpec:
        if self.every is not None:
            return ScheduleSpec(intervals=[ScheduleIntervalSpec(every=self.every)])
        return ScheduleSpec(cron_expressions=[self.cron or ""])

    def describe(self) -> str:
        return f"every {format_every(self.every)}" if self.every else f"cron {self.cron}"


def parse_every(raw: str) -> timedelta:
    """`30s`, `15m`, `1h`, `1d` or a combination such as `1h30m`, at least one second."""
    text = raw.strip().lower()
    found = _EVERY.fullmatch(text)
    if not text or found is None:
        raise ScheduleError(
            f"--every must be a duration like 30s, 15m, 1h, 1d or 1h30m, got {raw!r}"
        )
    seconds = sum(
        int(count) * size for count, (_, size) in zip(found.groups(), _UNITS, strict=True) if count
    )
    if seconds < MIN_EVERY.total_seconds():
        raise ScheduleError(f"--every must be at least 1s, got {raw!r}")
    if seconds > MAX_EVERY.total_seconds():
        raise ScheduleError(f"--every must be at most 366d (use --cron), got {raw!r}")
    return timedelta(seconds=seconds)


def format_every(every: timedelta | None) -> str:
    """The shortest `--every` text for an interval: 5400 s is `1h30m`."""
    if every is None:
        return "?"
    left = int(every.total_seconds())
    parts = []
    for unit, size in _UNITS:
        count, left = divmod(left, size)
        if count:
            parts.append(f"{count}{unit}")
    return "".join(parts) or "0s"
