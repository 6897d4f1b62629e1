"""The OpenAI-compatible engine's reading of a raw event stream (`openai_stream`)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest

from agentkeel.inference.engines.openai_stream import StreamErrorEvent, chunk_delta, sse_data


async def _pieces(*pieces: bytes) -> AsyncIterator[bytes]:
    for piece in pieces:
        yield piece


async def _read(*pieces: bytes) -> list[dict[str, Any]]:
    return [event async for event in sse_data(_pieces(*pieces))]


def _chat(text: str, finish: str | None = None) -> bytes:
    chunk = {"choices": [{"index": 0, "delta": {"content": text}, "finish_reason": finish}]}
    return b"data: " + json.dumps(chunk, ensure_ascii=False).encode() + b"\n\n"


async def test_events_split_anywhere_are_read_whole_until_done() -> None:
    stream = b": keep-alive\n\n" + _chat('{"a"') + _chat(": 1}", "stop") + b"data: [DONE]\n\n"
    cut = [stream[i : i + 7] for i in range(0, len(stream), 7)]  # pieces cut mid-line
    events = await _read(*cut, _chat("after done"))
    texts = [chunk_delta(e, chat=True, logprobs=False) for e in events]
    assert [d.text for d in texts if d] == ['{"a"', ": 1}"]
    assert texts[-1] is not None and texts[-1].finish_reason == "stop"


async def test_crlf_lines_other_fields_and_a_raw_line_separator_in_a_string() -> None:
    # U+2028 is a line break to `str.splitlines`, not to SSE: the event stays whole.
    stream = b"event: chunk\r\nid: 7\r\n" + _chat("a\u2028b").replace(b"\n\n", b"\r\n\r\n")
    events = await _read(stream)
    delta = chunk_delta(events[0], chat=True, logprobs=False)
    assert delta is not None and delta.text == "a\u2028b"


async def test_an_event_the_stream_cut_short_is_dropped_and_bare_cr_ends_lines() -> None:
    # A body cut mid-event (no closing blank line) loses that event, as the format says;
    # the answer then fails its output check rather than parse half a chunk.
    events = await _read(_chat("a").replace(b"\n", b"\r"), _chat("b").rstrip(b"\n"))
    assert [chunk_delta(e, chat=True, logprobs=False).text for e in events] == ["a"]  # type: ignore[union-attr]


async def test_the_body_after_done_is_read_to_its_end() -> None:
    """Read whole, the response's connection goes back to the pool for the next call."""
    read: list[bytes] = []

    async def body() -> AsyncIterator[bytes]:
        for piece in (_chat("a"), b"data: [DONE]\n\n", b": trailing\n\n"):
            read.append(piece)
            yield piece

    events = [e async for e in sse_data(body())]
    assert len(events) == 1 and len(read) == 3


async def test_an_error_event_raises_with_the_servers_message() -> None:
    error = b'data: {"error": {"message": "engine dead", "code": 500}}\n\n'
    with pytest.raises(StreamErrorEvent, match="engine dead"):
        await _read(_chat("a"), error)
    with pytest.raises(StreamErrorEvent, match="non-object"):
        await _read(b"data: [1, 2]\n\n")
    with pytest.raises(StreamErrorEvent, match="overloaded"):
        await _read(_chat("a"), b"event: error\ndata: overloaded\n\n")
    with pytest.raises(StreamErrorEvent, match="slot unavailable"):
        await _read(b'error: {"message": "slot unavailable"}\n\n')


def test_the_closing_usage_chunk_and_a_chunk_of_neither() -> None:
    usage = chunk_delta(
        {"choices": [], "usage": {"prompt_tokens": 12, "completion_tokens": 3}},
        chat=True,
        logprobs=False,
    )
    assert usage is not None and usage.text == "" and usage.usage is not None
    assert (usage.usage.prompt_tokens, usage.usage.completion_tokens) == (12, 3)
    assert chunk_delta({"choices": []}, chat=True, logprobs=False) is None


def test_completions_text_and_both_forms_of_logprobs() -> None:
    tokens_form = {"tokens": ["a"], "token_logprobs": [-0.5], "top_logprobs": [{"a": -0.5}]}
    chunk = {"choices": [{"text": "a", "logprobs": tokens_form, "finish_reason": "length"}]}
    delta = chunk_delta(chunk, chat=False, logprobs=True)
    assert delta is not None and delta.text == "a" and delta.finish_reason == "length"
    assert [(p.token, p.logprob, p.top) for p in delta.logprobs] == [("a", -0.5, {"a": -0.5})]
    content_form = {"content": [{"token": "b", "logprob": -1.0, "top_logprobs": []}]}
    chat_chunk = {"choices": [{"delta": {"content": "b"}, "logprobs": content_form}]}
    chat = chunk_delta(chat_chunk, chat=True, logprobs=True)
    assert chat is not None and [(p.token, p.logprob) for p in chat.logprobs] == [("b", -1.0)]
    assert chunk_delta(chat_chunk, chat=True, logprobs=False).logprobs == []  # type: ignore[union-attr]


async def test_a_last_event_ended_by_bare_crs_is_read() -> None:
    events = await _read(_chat("z").replace(b"\n", b"\r"))
    assert [chunk_delta(e, chat=True, logprobs=False).text for e in events] == ["z"]  # type: ignore[union-attr]


async def test_a_body_held_open_after_done_is_left_within_the_drain_bound() -> None:
    async def held_open() -> AsyncIterator[bytes]:
        yield _chat("a") + b"data: [DONE]\n\n"
        await asyncio.sleep(30)  # a server that never ends its body
        yield b""

    events = await asyncio.wait_for(_read_from(held_open()), 5)
    assert len(events) == 1


async def _read_from(body: AsyncIterator[bytes]) -> list[dict[str, Any]]:
    return [event async for event in sse_data(body)]
