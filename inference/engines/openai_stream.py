"""A streamed OpenAI-compatible answer read from its raw server-sent events, as plain JSON.

The openai client builds a typed model of every chunk it streams (`construct_type`): with
a model that decodes fast, that was a sixth of the inference worker's CPU (py-spy, an
instant model in `bench.peers`), because a plan of a hundred tokens is a hundred chunks,
and it sat between the model's last token and the plan's step. Here each event's `data`
is decoded with `json.loads`, and nothing is built but the `TokenDelta` handed on.

Lines end at CRLF, LF or a CR alone, as the SSE format defines them, and nowhere else: a
server may write U+2028 raw inside a JSON string, which `str.splitlines` would cut.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from typing import Any

from agentkeel.inference.engines.openai_output import logprobs_of, usage_of
from agentkeel.inference.engines.protocol import TokenDelta, as_finish_reason

DONE = b"[DONE]"
DRAIN_S = 0.1
"""How long the rest of a body after `[DONE]` is read for: a response read to its end
returns its connection to the pool (as the openai client does), a server that holds the
stream open after `[DONE]` is not waited for."""


class StreamErrorEvent(RuntimeError):
    """The server ended the stream with an error (retried as any failed call)."""


async def sse_data(raw: AsyncIterator[bytes]) -> AsyncIterator[dict[str, Any]]:
    """Each complete event's decoded `data` until `[DONE]` or the stream's end (an event
    without its closing blank line is dropped, as the format says); an error event (an
    `event: error`, an `error` field, or data that is an error object) raises
    `StreamErrorEvent` with the server's message."""
    lines = _lines(raw)
    data: list[bytes] = []
    kind = b""
    async for line in lines:
        if line:
            field, _, value = line.partition(b":")
            value = value.removeprefix(b" ")
            if field == b"data":
                data.append(value)
            elif field == b"event":
                kind = value
            elif field == b"error":  # (llama.cpp's server has sent one so)
                raise StreamErrorEvent(f"the server ended the stream with an error: {value!r}")
            continue  # (other fields, and ':' comments, carry no output)
        event, data, this_kind, kind = b"\n".join(data), [], kind, b""
        if not event:
            continue
        if event.strip() == DONE:
            await _drain(lines)
            return
        if this_kind == b"error":
            raise StreamErrorEvent(f"the server ended the stream with an error: {event[:500]!r}")
        yield _decoded(event)


async def _lines(raw: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
    """The body's lines, ended by CRLF, LF or CR alone (a CR at a piece's end waits for the
    next piece: it may be half of a CRLF)."""
    pending = b""
    async for piece in raw:
        pending += piece
        body, held = (pending[:-1], b"\r") if pending.endswith(b"\r") else (pending, b"")
        *lines, rest = body.replace(b"\r\n", b"\n").replace(b"\r", b"\n").split(b"\n")
        pending = rest + held  # (`rest` holds no line end)
        for line in lines:
            yield line
    if pending.endswith(b"\r"):  # the body's last line, ended by a CR alone
        yield pending[:-1]


async def _drain(lines: AsyncIterator[bytes]) -> None:
    with contextlib.suppress(Exception):  # (a timeout included: the answer is whole)
        async with asyncio.timeout(DRAIN_S):
            async for _ in lines:
                pass


def _decoded(event: bytes) -> dict[str, Any]:
    document = json.loads(event)
    if not isinstance(document, dict):
        raise StreamErrorEvent(f"the server streamed a non-object event: {event[:200]!r}")
    error = document.get("error")
    if error is not None:
        message = error.get("message", error) if isinstance(error, dict) else error
        raise StreamErrorEvent(f"the server ended the stream with an error: {message}")
    return document


def chunk_delta(chunk: dict[str, Any], *, chat: bool, logprobs: bool) -> TokenDelta | None:
    """A chunk's new text, or the closing usage chunk's counts; None for a chunk of
    neither (a usage-less chunk with no choice)."""
    choices = chunk.get("choices") or []
    if not choices:  # the closing usage chunk (`include_usage`)
        usage = chunk.get("usage")
        if not isinstance(usage, dict):
            return None
        return TokenDelta(text="", usage=usage_of(usage))
    choice = choices[0]
    if chat:
        delta = choice.get("delta") or {}
        text = delta.get("content") or ""
    else:
        text = choice.get("text") or ""
    return TokenDelta(
        text=text,
        logprobs=logprobs_of(choice.get("logprobs")) if logprobs else [],
        finish_reason=as_finish_reason(choice.get("finish_reason")),
    )
