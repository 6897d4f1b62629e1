"""A schedule's timing: intervals read and printed alike, a bad one refused naming it."""

from __future__ import annotations

import pytest

from agentkeel.client.schedule_timing import ScheduleError, Timing, format_every, parse_every


@pytest.mark.parametrize("every", ["", "soon", "0s", "500ms", "1.5h", "1m1h", "-1m", "400d"])
def test_a_bad_interval_is_refused_naming_it(every: str) -> None:
    with pytest.raises(ScheduleError, match="--every") as refused:
        Timing.parse(every=every)
    assert repr(every) in str(refused.value)


def test_intervals_read_and_print_alike() -> None:
    for text, seconds in (("30s", 30), ("15m", 900), ("1h", 3600), ("1d", 86400)):
        assert parse_every(text).total_seconds() == seconds
        assert format_every(parse_every(text)) == text
    assert parse_every(" 1H30m ").total_seconds() == 5400
    assert format_every(parse_every("1d1h30m5s")) == "1d1h30m5s"
