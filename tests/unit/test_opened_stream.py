"""A streamed answer whose reader stops early is closed then and there (`opened_stream`):
its engine's `finally` (the HTTP response closed, the server's generation ended) has run
by the time the reader's error, or its cancellation, leaves the block."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from agentkeel.inference.engines.protocol import GenerateRequest, TokenDelta, opened_stream


class EndlessEngine:
    """Streams pieces until closed; says whether it was."""

    name = "endless"

    def __init__(self) -> None:
        self.closed = False
        self.pieces = 0

    async def stream(self, request: GenerateRequest) -> AsyncIterator[TokenDelta]:
        try:
            while True:
                self.pieces += 1
                yield TokenDelta(text="x")
                await asyncio.sleep(0)
        finally:
            self.closed = True


async def test_a_reader_that_fails_on_a_piece_closes_the_stream_at_once() -> None:
    engine = EndlessEngine()
    with pytest.raises(RuntimeError, match="sink failed"):
        async with opened_stream(engine, GenerateRequest(prompt="x")) as deltas:  # type: ignore[arg-type]
            async for _ in deltas:
                if engine.pieces == 3:
                    raise RuntimeError("sink failed")
    assert engine.closed and engine.pieces == 3


async def test_a_cancelled_reader_closes_the_stream_at_once() -> None:
    engine = EndlessEngine()
    reading = asyncio.Event()

    async def read() -> None:
        async with opened_stream(engine, GenerateRequest(prompt="x")) as deltas:  # type: ignore[arg-type]
            async for _ in deltas:
                reading.set()

    task = asyncio.create_task(read())
    await reading.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert engine.closed
