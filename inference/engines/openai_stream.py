"""A streamed OpenAI-compatible answer read from its raw server-sent events, as plain JSON.

The openai client builds a typed model of every chunk it streams (`construct_type`): with
a model that decodes fast, that was a sixth of the inference worker's CPU (py-spy, an
instant model in `bench.peers`), because a plan of a hundred tokens is a hundred chunks,
and it sat between the model's last token and the plan's step. Here each event's `data`
is decoded with `json.loads`, and nothing is built but the `TokenDelta` handed on.

Lines are split on LF (and CRLF) only, as the SSE format defines them: a server may write
U+2028 raw inside a JSON string, which `str.splitlines` would cut.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

from agentkeel.inference.engines.openai_output import logprobs_of
from agentkeel.inference.engines.protocol import TokenDelta, Usage, as_finish_reason

DONE = b"[DONE]"


class StreamErrorEvent(RuntimeError):
    """The server ended the stream with an `error` event (retried as any failed call)."""


async def sse_data(raw: AsyncIterator[bytes]) -> AsyncIterator[dict[str, Any]]:
    """Each event's decoded `data`, until `[DONE]` or the stream's end; an event that is an
    error object raises `StreamErrorEvent` with the server's message."""
    pending = b""
    data: list[bytes] = []
    async for piece in raw:
        pending += piece
        *lines, pending = pending.split(b"\n")
        for line in lines:
            line = line.removesuffix(b"\r")
            if line:
                field, _, value = line.partition(b":")
                if field == b"data":  # (other fields, and ':' comments, carry no output)
                    data.append(value.removeprefix(b" "))
                continue
            if data:  # a blank line ends the event
                event, data = b"\n".join(data), []
                if event.strip() == DONE:
                    return
                yield _decoded(event)
    if pending.startswith(b"data:"):
        data.append(pending[5:].removeprefix(b" "))
    if data and (event := b"\n".join(data)).strip() != DONE:
        yield _decoded(event)


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
        return TokenDelta(
            text="",
            usage=Usage(
                prompt_tokens=usage.get("prompt_tokens") or 0,
                completion_tokens=usage.get("completion_tokens") or 0,
            ),
        )
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
