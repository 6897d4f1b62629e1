"""An engine seen from outside: requests in flight (and their peak) and tokens generated.

Wraps any `Engine` without changing what it returns; the inference benchmark reads its
token count, the batching test its peak concurrency.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

from agentkeel.inference.engines.protocol import (
    Engine,
    GenerateRequest,
    GenerateResult,
    TokenDelta,
    opened_stream,
)


class MeteredEngine:
    """`Engine` that counts what passes through it."""

    def __init__(self, engine: Engine, *, count_tokens: bool = False) -> None:
        """`count_tokens`: ask streams for logprobs (one entry per token) and count them;
        a delta may carry several tokens (speculative decoding), so its text cannot."""
        self.engine = engine
        self.name = engine.name
        self.count_tokens = count_tokens
        self.in_flight = 0
        self.max_in_flight = 0
        self.tokens = 0

    @property
    def streams_json(self) -> bool:
        return bool(getattr(self.engine, "streams_json", False))

    async def start(self) -> None:
        await self.engine.start()

    async def close(self) -> None:
        await self.engine.close()

    async def generate(self, request: GenerateRequest) -> GenerateResult:
        self._enter()
        try:
            return await self.engine.generate(request)
        finally:
            self.in_flight -= 1

    async def stream(self, request: GenerateRequest) -> AsyncIterator[TokenDelta]:
        self._enter()
        if self.count_tokens and request.logprobs is None:
            request = request.model_copy(update={"logprobs": 0})
        try:
            async with opened_stream(self.engine, request) as deltas:
                async for delta in deltas:
                    self.tokens += len(delta.logprobs)
                    yield delta
        finally:
            self.in_flight -= 1

    def _enter(self) -> None:
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
