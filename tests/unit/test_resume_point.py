"""Where an SSE stream resumes from a `Last-Event-ID` a client sent back: any header, however
malformed, resumes from a valid point (the start), never breaks the stream."""

from __future__ import annotations

import pytest

from agentkeel.gateway.events import resume_point


def test_an_event_id_of_this_gateway_resumes_where_it_was() -> None:
    assert resume_point("1733400000000-3/2") == ("1733400000000-3", 2)
    assert resume_point("1733400000000/0") == ("1733400000000", 0)
    assert resume_point(None) == ("0", 0)
    # A bad attempt alone: the position stands, the attempt is the first.
    assert resume_point("0/²") == ("0", 0)
    assert resume_point("7-1/" + "9" * 5000) == ("7-1", 0)


@pytest.mark.parametrize(
    "sent",
    ["²-1/0", "1-²/0", "9" * 5000 + "/0", "-/-", "1-2-3/x", "١٢/0"],
)
def test_a_malformed_event_id_resumes_from_the_start(sent: str) -> None:
    assert resume_point(sent) == ("0", 0)
