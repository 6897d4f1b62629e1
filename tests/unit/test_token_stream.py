"""The token stream without a Redis: the answer view across attempts, a publisher that
outlives a Redis that is down, and the terminal printer."""

from __future__ import annotations

import asyncio
import io
import socket
from datetime import UTC, datetime

from structlog.testing import capture_logs

from agentkeel.activities.token_stream import TokenStream
from agentkeel.client.report import RESTARTED_MARK, StreamedAnswer
from agentkeel.client.token_follow import AnswerView, TokenReader, ViewChange, relay_until
from agentkeel.schemas.tokens import TokenEvent, TokenEventType
from agentkeel.settings.connections import redis_client

RESET, TOKEN, DONE = TokenEventType.RESET, TokenEventType.TOKEN, TokenEventType.DONE


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_a_token_of_a_newer_attempt_restarts_the_view_without_its_reset() -> None:
    view = AnswerView()
    assert view.apply(TokenEvent(type=TOKEN, attempt=1, text="old")) is ViewChange.APPENDED
    assert view.apply(TokenEvent(type=TOKEN, attempt=2, text="new")) is ViewChange.RESTARTED
    assert view.text == "new"


async def test_a_publisher_outlives_a_redis_that_is_down() -> None:
    down = redis_client(f"redis://127.0.0.1:{closed_port()}/0")  # the workers' client
    stream = TokenStream(down, "agentkeel:tokens:nowhere:run", 1)
    before = datetime.now(UTC)
    try:
        with capture_logs() as logs:
            await stream.begin()
            await stream.publish("still ")
            await stream.publish("answered")
            await stream.finish()
    finally:
        await down.aclose()
    assert not stream.enabled
    assert [(log["event"], log["log_level"]) for log in logs] == [
        ("token_stream_off", "warning")
    ], "one warning, then the stream is off: later calls do not touch Redis"
    assert stream.first_token_at is not None and stream.first_token_at >= before


async def test_without_redis_nothing_is_streamed_but_the_first_token_is_timed() -> None:
    stream = TokenStream(None, "agentkeel:tokens:none:run", 1)
    await stream.begin()
    await stream.publish("")
    assert stream.first_token_at is None, "empty text is not a token"
    await stream.publish("hi")
    first = stream.first_token_at
    await stream.publish("there")
    await stream.finish()
    assert first is not None and stream.first_token_at == first
    assert not stream.enabled


async def test_a_stream_that_fails_does_not_fail_the_result() -> None:
    down = redis_client(f"redis://127.0.0.1:{closed_port()}/0")  # the workers' client

    async def result() -> str:
        await asyncio.sleep(0.5)  # the follower fails meanwhile
        return "answered anyway"

    try:
        with capture_logs() as logs:
            reader = TokenReader(down, "agentkeel:tokens:nowhere:run")
            outcome = await relay_until(reader, result(), lambda event: None)
    finally:
        await down.aclose()
    assert outcome == "answered anyway"
    assert [log["event"] for log in logs] == ["token_stream_read_failed"]


def test_the_printer_marks_a_restart_and_does_not_repeat_the_answer() -> None:
    out = io.StringIO()
    printer = StreamedAnswer(out)
    for event in [
        TokenEvent(type=RESET, attempt=1),
        TokenEvent(type=TOKEN, attempt=1, text="Half an"),
        TokenEvent(type=RESET, attempt=2),
        TokenEvent(type=TOKEN, attempt=2, text="A whole "),
        TokenEvent(type=TOKEN, attempt=2, text="answer."),
        TokenEvent(type=DONE, attempt=2),
    ]:
        printer.on_event(event)
    assert printer.close("A whole answer.") is True
    assert out.getvalue() == f"  Half an\n  {RESTARTED_MARK}\n  A whole answer.\n"

    cut_off = StreamedAnswer(io.StringIO())
    cut_off.on_event(TokenEvent(type=TOKEN, attempt=1, text="A whole"))
    assert cut_off.close("A whole answer.") is False, "the full answer is printed after all"
