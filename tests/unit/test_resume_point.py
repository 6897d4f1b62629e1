"""Where an SSE stream resumes from a `Last-Event-ID` a client sent back: any header, however
malformed, resumes from a valid point (the start), never breaks the stream."""

from __future__ import annotations

import pytest

from agentkeel.gateway.events import resume_point


def test_an_event_id_of_this_gateway_resumes_where_it_was() -> None:
    assert resume_point("1733400000000-3/2") == ("1733400000000-3", 2)
    assert resume_point("1733400000000/0") == ("1733400000000", 0)
    assert resume_point(None) == ("0", 0)


@pytest.mark.parametrize(
    "sent",
    ["0/²", "²-1/0", "1-²/0", "0/" + "9" * 5000, "9" * 5000 + "/0", "-/-", "1-2-3/x", "١٢/0"],
)
def test_a_malformed_event_id_resumes_from_the_start(sent: str) -> None:
    position, attempt = resume_point(sent)
    head, _, seq = position.partition("-")
    assert head.isascii() and head.isdigit() and len(head) <= 19
    assert seq == "" or (seq.isascii() and seq.isdigit())
    assert 0 <= attempt < 2**63
